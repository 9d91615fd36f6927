package alerts

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

// The one fault-code table (internal/cann/logstate codes.go) judges each
// code: a rank's own failure, a waiting code, or either. The shipped rules,
// the Alertmanager examples and docs must judge them as it does; diagnose
// reads the table itself (diagnose/analyse TestRolesFollowTheTable) and the
// mixin reads its generated form (mixin TestFaultTableCurrent).

// tableCodes returns the table's codes for which keep is true.
func tableCodes(keep func(logstate.Code) bool) []string {
	var out []string
	for _, c := range logstate.Codes() {
		if keep(c) {
			out = append(out, c.Code)
		}
	}
	slices.Sort(out)
	return out
}

func ownCodes() []string {
	return tableCodes(func(c logstate.Code) bool { return c.Role == logstate.RoleOwn })
}

func consequenceCodes() []string {
	return tableCodes(func(c logstate.Code) bool { return c.Role != logstate.RoleOwn })
}

// alternation splits a regex alternation of codes ("EI0002|EI0005") into
// its sorted codes.
func alternation(t *testing.T, re string) []string {
	t.Helper()
	codes := strings.Split(re, "|")
	for _, c := range codes {
		if !regexp.MustCompile(`^E[A-Z][0-9]{4}$`).MatchString(c) {
			t.Fatalf("%q is not an alternation of codes", re)
		}
	}
	slices.Sort(codes)
	return codes
}

var codeMatcher = regexp.MustCompile(`code(=~|=|!~|!=)"([^"]*)"`)

// TestFaultTableAgreesWithRules: HCCLJobFailed starts from exactly the
// table's own-failure codes, and every alert keyed on codes has the
// table's audience of each code among its audiences.
func TestFaultTableAgreesWithRules(t *testing.T) {
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Expr   string            `yaml:"expr"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(Rules, &f); err != nil {
		t.Fatal(err)
	}
	audiences := map[string][]string{} // code → audiences of the alerts keyed on it
	sawJobFailed := false
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if r.Alert == "HCCLJobFailed" {
				sawJobFailed = true
				var own []string
				for _, m := range codeMatcher.FindAllStringSubmatch(r.Expr, -1) {
					if m[1] == "!~" || m[1] == "!=" {
						t.Errorf("HCCLJobFailed excludes codes (%s): a code outside the table would start it, which diagnose takes as either", m[0])
					}
					if m[1] == "=~" && !strings.Contains(m[2], "[") {
						own = alternation(t, m[2])
					}
				}
				if !slices.Equal(own, ownCodes()) {
					t.Errorf("HCCLJobFailed starts from %v, the table's own failures are %v", own, ownCodes())
				}
				continue
			}
			if r.Alert == "HCCLJobFailuresAcrossCluster" {
				continue // counts jobs by infraCodes: TestFaultTableInfraCodes
			}
			for _, m := range codeMatcher.FindAllStringSubmatch(r.Expr, -1) {
				if m[1] != "=" && m[1] != "=~" {
					continue
				}
				for _, code := range strings.Split(m[2], "|") {
					if !slices.Contains(audiences[code], r.Labels["audience"]) {
						audiences[code] = append(audiences[code], r.Labels["audience"])
					}
				}
			}
		}
	}
	if !sawJobFailed {
		t.Fatal("no HCCLJobFailed in the rules")
	}
	if len(audiences) < 8 {
		t.Fatalf("only %d codes keyed by alerts: %v", len(audiences), audiences)
	}
	for code, got := range audiences {
		row, ok := logstate.CodeRow(code)
		if !ok {
			t.Errorf("an alert keys on %s, which the fault-code table lacks", code)
			continue
		}
		if !slices.Contains(got, string(row.Audience)) {
			t.Errorf("%s: the table's audience is %s, its alerts go to %v", code, row.Audience, got)
		}
	}
}

// TestFaultTableInfraCodes: the cluster-wide page counts jobs with the
// table's infrastructure codes of link setup.
func TestFaultTableInfraCodes(t *testing.T) {
	want := tableCodes(func(c logstate.Code) bool {
		return c.Audience == logstate.AudienceInfra && c.Stage == "link_setup"
	})
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(Rules, &f); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "HCCLJobFailuresAcrossCluster" {
				continue
			}
			for _, m := range codeMatcher.FindAllStringSubmatch(r.Expr, -1) {
				if m[1] == "=~" && !strings.Contains(m[2], "[") {
					got = alternation(t, m[2])
				}
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("HCCLJobFailuresAcrossCluster counts %v, the table's infra codes at link setup are %v", got, want)
	}
}

// TestFaultTableAgreesWithAlertmanagerExamples: every shipped Alertmanager
// example holds back exactly the table's waiting and either codes behind
// the job's inhibitor.
func TestFaultTableAgreesWithAlertmanagerExamples(t *testing.T) {
	want := consequenceCodes()
	for _, name := range []string{"alertmanager.example.yml", "alertmanagerconfig.example.yaml", "alertmanagerconfig.team.example.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, n := inhibitedCodes(t, b)
		if n != 1 {
			t.Errorf("%s: %d inhibit rules with the job-consequences source, want 1", name, n)
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s holds back %v behind HCCLJobFailed; the table's waiting and either codes are %v", name, got, want)
		}
	}
}

// inhibitedCodes returns the codes the job-consequences inhibit rule of an
// Alertmanager configuration (plain or AlertmanagerConfig resource) holds
// back, and how many such rules it has.
func inhibitedCodes(t *testing.T, b []byte) ([]string, int) {
	t.Helper()
	var plain struct {
		InhibitRules []struct {
			Source []string `yaml:"source_matchers"`
			Target []string `yaml:"target_matchers"`
		} `yaml:"inhibit_rules"`
	}
	type matcher struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		MatchType string `yaml:"matchType"`
	}
	var crd struct {
		Spec struct {
			InhibitRules []struct {
				Source []matcher `yaml:"sourceMatch"`
				Target []matcher `yaml:"targetMatch"`
			} `yaml:"inhibitRules"`
		} `yaml:"spec"`
	}
	var codes []string
	n := 0
	if err := yaml.Unmarshal(b, &plain); err != nil {
		t.Fatal(err)
	}
	for _, r := range plain.InhibitRules {
		if !slices.Contains(r.Source, `inhibits="job-consequences"`) {
			continue
		}
		n++
		for _, m := range r.Target {
			if re, ok := strings.CutPrefix(m, `code=~"`); ok {
				codes = alternation(t, strings.TrimSuffix(re, `"`))
			}
		}
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	for _, r := range crd.Spec.InhibitRules {
		if !slices.Contains(r.Source, matcher{"inhibits", "job-consequences", "="}) {
			continue
		}
		n++
		for _, m := range r.Target {
			if m.Name == "code" && m.MatchType == "=~" {
				codes = alternation(t, m.Value)
			}
		}
	}
	return codes, n
}

// TestFaultTableAgreesWithDocs: docs/diagnose.md's role table lists each
// role's codes as the table has them.
func TestFaultTableAgreesWithDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/diagnose.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []logstate.Role{logstate.RoleOwn, logstate.RoleWaiting, logstate.RoleEither} {
		m := regexp.MustCompile("(?m)^\\| `" + string(role) + "` \\| ([^|]*) \\|").FindSubmatch(b)
		if m == nil {
			t.Errorf("docs/diagnose.md has no row of role %s", role)
			continue
		}
		got := regexp.MustCompile(`E[A-Z][0-9]{4}`).FindAllString(string(m[1]), -1)
		slices.Sort(got)
		want := tableCodes(func(c logstate.Code) bool { return c.Role == role })
		if !slices.Equal(got, want) {
			t.Errorf("docs/diagnose.md lists %v as %s, the table %v", got, role, want)
		}
	}
}
