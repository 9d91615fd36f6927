// Package deploy holds only tests: they check the deployment files under
// deploy/ and the repository's Dockerfile without a Docker engine, Kubernetes
// cluster or systemd instance (none of which CI has).
package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	line int // 1-based line where it starts
	cmd  string
	args string
}

// parseDockerfile splits a Dockerfile into instructions. It knows the syntax
// this repository uses (comments, parser directives, backslash continuation),
// which is enough to catch typos and broken references; it is no BuildKit.
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open Dockerfile: %v", err)
	}
	defer f.Close()
	var (
		out     []instruction
		cur     strings.Builder
		start   int
		lineNum int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNum++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue // comment or parser directive, also inside a continuation
		}
		if cur.Len() == 0 {
			if trimmed == "" {
				continue
			}
			start = lineNum
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(trimmed)
		text := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	if cur.Len() != 0 {
		t.Fatalf("Dockerfile ends inside a line continuation (line %d)", start)
	}
	return out
}

var (
	knownInstructions = map[string]bool{
		"FROM": true, "ARG": true, "ENV": true, "RUN": true, "COPY": true, "ADD": true, "WORKDIR": true,
		"USER": true, "EXPOSE": true, "ENTRYPOINT": true, "CMD": true, "LABEL": true, "VOLUME": true,
		"HEALTHCHECK": true, "STOPSIGNAL": true, "SHELL": true, "ONBUILD": true,
	}
	varRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
)

func argName(args string) string {
	name, _, _ := strings.Cut(args, "=")
	return strings.TrimSpace(name)
}

func envNames(args string) []string {
	var names []string
	for _, field := range strings.Fields(args) {
		if name, _, ok := strings.Cut(field, "="); ok {
			names = append(names, name)
		}
	}
	return names
}

// TestDockerfile checks what a docker build would trip over first: unknown
// instructions, variables used without ARG/ENV, COPY sources missing from the
// repository or excluded by .dockerignore, --from stages that do not exist,
// and a Go toolchain image older than go.mod asks for.
func TestDockerfile(t *testing.T) {
	root := filepath.Join("..")
	ins := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	ignored := readDockerignore(t, filepath.Join(root, ".dockerignore"))

	globalArgs := map[string]bool{}
	var stageVars map[string]bool // nil before the first FROM
	stages := map[string]bool{}
	var sawBuild, sawEntrypoint bool
	globalDefaults := map[string]string{}

	for _, in := range ins {
		if !knownInstructions[in.cmd] {
			t.Errorf("line %d: unknown instruction %q", in.line, in.cmd)
			continue
		}
		switch in.cmd {
		case "ARG":
			name := argName(in.args)
			if stageVars == nil {
				globalArgs[name] = true
				if _, def, ok := strings.Cut(in.args, "="); ok {
					globalDefaults[name] = def
				}
			} else {
				stageVars[name] = true
			}
			continue
		case "FROM":
			// FROM may use global ARGs and the automatic platform ARGs.
			for _, m := range varRef.FindAllStringSubmatch(in.args, -1) {
				if !globalArgs[m[1]] && !strings.HasPrefix(m[1], "BUILD") && !strings.HasPrefix(m[1], "TARGET") {
					t.Errorf("line %d: FROM uses $%s, which no global ARG declares", in.line, m[1])
				}
			}
			stageVars = map[string]bool{}
			fields := strings.Fields(in.args)
			for i, f := range fields {
				if strings.EqualFold(f, "AS") && i+1 < len(fields) {
					stages[fields[i+1]] = true
				}
			}
			continue
		}
		if stageVars == nil {
			t.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
			continue
		}
		// Variables are expanded in these instructions; RUN goes through a
		// shell that sees only ARG/ENV of the stage (and the image's own ENV,
		// which this Dockerfile does not rely on).
		for _, m := range varRef.FindAllStringSubmatch(in.args, -1) {
			if in.cmd == "ENV" && m[1] == "PATH" {
				continue
			}
			if !stageVars[m[1]] {
				t.Errorf("line %d: %s uses $%s, which this stage does not declare (ARG must be repeated after FROM)", in.line, in.cmd, m[1])
			}
		}
		switch in.cmd {
		case "ENV":
			for _, n := range envNames(in.args) {
				stageVars[n] = true
			}
		case "COPY", "ADD":
			checkCopy(t, in, root, stages, ignored)
		case "RUN":
			if strings.Contains(in.args, "go build") {
				sawBuild = true
				checkGoBuild(t, in, root)
			}
		case "ENTRYPOINT":
			sawEntrypoint = true
			if !strings.HasPrefix(in.args, "[") {
				t.Errorf("line %d: ENTRYPOINT should be exec form so signals reach the exporter", in.line)
			}
		}
	}
	if !sawBuild {
		t.Error("no RUN … go build in the Dockerfile")
	}
	if !sawEntrypoint {
		t.Error("no ENTRYPOINT")
	}
	checkGoVersion(t, root, globalDefaults["GO_VERSION"])
}

func checkCopy(t *testing.T, in instruction, root string, stages map[string]bool, ignored []string) {
	t.Helper()
	fields := strings.Fields(in.args)
	from := ""
	var paths []string
	for _, f := range fields {
		if v, ok := strings.CutPrefix(f, "--from="); ok {
			from = v
			continue
		}
		if strings.HasPrefix(f, "--") {
			continue
		}
		paths = append(paths, f)
	}
	if len(paths) < 2 {
		t.Errorf("line %d: %s needs a source and a destination", in.line, in.cmd)
		return
	}
	if from != "" {
		if !stages[from] {
			t.Errorf("line %d: COPY --from=%s names no earlier stage", in.line, from)
		}
		return
	}
	for _, src := range paths[:len(paths)-1] {
		if _, err := os.Stat(filepath.Join(root, src)); err != nil {
			t.Errorf("line %d: COPY source %q: %v", in.line, src, err)
		}
		for _, pat := range ignored {
			if ok, _ := filepath.Match(pat, filepath.Clean(src)); ok {
				t.Errorf("line %d: COPY source %q is excluded by .dockerignore pattern %q", in.line, src, pat)
			}
		}
	}
}

// checkGoBuild checks that the built package exists and that the build
// context variables are injected at their real import path (a typo there
// makes the linker silently ignore -X). The version itself is never
// injected: the binary embeds the VERSION file, which also tags the image.
func checkGoBuild(t *testing.T, in instruction, root string) {
	t.Helper()
	pkg := regexp.MustCompile(`\./cmd/[A-Za-z0-9_/]+`).FindString(in.args)
	if pkg == "" {
		t.Errorf("line %d: go build names no ./cmd/ package", in.line)
	} else if _, err := os.Stat(filepath.Join(root, pkg, "main.go")); err != nil {
		t.Errorf("line %d: built package %s: %v", in.line, pkg, err)
	}
	for _, v := range []string{"Revision", "Branch", "BuildUser", "BuildDate"} {
		if !strings.Contains(in.args, "-X github.com/prometheus/common/version."+v+"=") {
			t.Errorf("line %d: go build does not inject version.%s", in.line, v)
		}
	}
	if strings.Contains(in.args, "version.Version=") {
		t.Errorf("line %d: go build injects version.Version; the binary embeds VERSION", in.line)
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=${TARGETOS}", "GOARCH=${TARGETARCH}"} {
		if !strings.Contains(in.args, want) {
			t.Errorf("line %d: go build lacks %s", in.line, want)
		}
	}
}

// checkGoVersion keeps the builder image at least at go.mod's go directive.
func checkGoVersion(t *testing.T, root, imageVersion string) {
	t.Helper()
	if imageVersion == "" {
		t.Error("Dockerfile declares no global ARG GO_VERSION with a default")
		return
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(mod))
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	want := m[1] + "." + m[2]
	if imageVersion != want {
		t.Errorf("Dockerfile GO_VERSION=%s, go.mod needs go %s", imageVersion, want)
	}
}

func readDockerignore(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read .dockerignore: %v", err)
	}
	var pats []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		pats = append(pats, strings.TrimPrefix(line, "/"))
	}
	return pats
}
