package e2e

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestREADMEMetricTableMatchesDescriptors compares README's metric table,
// names and labels, with what the collectors export: every
// prometheus.NewDesc of the exporter's own code (name and variable labels
// resolved from the source, through helper functions and package-level
// label slices) and every series of the collectors' golden expositions
// (testdata/**/*.prom, the output the golden tests check). A series that is
// exported but not documented, documented but exported by nothing, or
// documented with other labels fails the test.
func TestREADMEMetricTableMatchesDescriptors(t *testing.T) {
	root := filepath.Join("..", "..")
	exported := exportedMetrics(t, root)
	documented := readmeMetrics(t, filepath.Join(root, "README.md"))
	if len(exported) < 50 || len(documented) < 50 {
		t.Fatalf("found %d exported and %d documented metrics: the scan is broken", len(exported), len(documented))
	}
	for _, name := range slices.Sorted(maps.Keys(exported)) {
		labels := exported[name]
		doc, ok := documented[name]
		if !ok {
			t.Errorf("%s{%s} is exported but not in README's metric table", name, strings.Join(labels, ","))
			continue
		}
		if !slices.Equal(labels, doc) {
			t.Errorf("%s: README lists labels {%s}, the exporter's are {%s}", name, strings.Join(doc, ","), strings.Join(labels, ","))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(documented)) {
		if _, ok := exported[name]; !ok && !libraryMetrics[name] && ownMetric(name) {
			t.Errorf("%s is in README's metric table but nothing exports it", name)
		}
	}
}

// libraryMetrics are the exporter's series that client_golang builds, not
// a NewDesc of this code.
var libraryMetrics = map[string]bool{"hccl_exporter_build_info": true}

func ownMetric(name string) bool {
	return strings.HasPrefix(name, "ascend_") || strings.HasPrefix(name, "hccl_")
}

// exportedMetrics returns name → sorted label names of every series the
// exporter's code can export.
func exportedMetrics(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	add := func(name string, labels []string) {
		if !ownMetric(name) {
			return
		}
		set := map[string]bool{}
		for _, l := range out[name] {
			set[l] = true
		}
		for _, l := range labels {
			set[l] = true
		}
		out[name] = slices.Sorted(maps.Keys(set))
	}
	for _, dir := range []string{"collectors", "exporter", "cmd", "internal"} {
		descs, err := scanDescs(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range descs {
			add(d.name, d.labels)
		}
	}
	// Golden expositions: the labels of series whose NewDesc the scan
	// cannot resolve statically, and a check of those it can.
	for _, dir := range []string{"collectors", "internal"} {
		walkGoldens(t, filepath.Join(root, dir), add)
	}
	return out
}

// walkGoldens adds the series of every golden exposition under dir.
func walkGoldens(t *testing.T, dir string, add func(string, []string)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".prom") || !strings.Contains(path, "testdata") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			name, labels := seriesLabels(line)
			add(name, labels)
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

var seriesLabelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)

// seriesLabels splits a text-format sample line into its name and label names.
func seriesLabels(line string) (string, []string) {
	name, rest, ok := strings.Cut(line, "{")
	if !ok {
		name, _, _ = strings.Cut(line, " ")
		return name, nil
	}
	var labels []string
	for _, m := range seriesLabelRE.FindAllStringSubmatch(rest, -1) {
		labels = append(labels, m[1])
	}
	return name, labels
}

type desc struct {
	name   string
	labels []string
}

// scanDescs finds the prometheus.NewDesc calls of the non-test Go files
// below dir and resolves their names and variable labels: string literals
// and constants, prometheus.BuildFQName of those, package-level []string
// variables, append of those, and parameters of a helper (each call of the
// helper with literal arguments gives one Desc).
func scanDescs(dir string) ([]desc, error) {
	pkgs := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkgs[filepath.Dir(path)] = append(pkgs[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []desc
	for _, files := range pkgs {
		out = append(out, scanPackage(files)...)
	}
	return out, nil
}

type pkgScope struct {
	values map[string]ast.Expr      // package-level const and var initialisers
	funcs  map[string]*ast.FuncDecl // package-level functions
	files  []*ast.File
}

func scanPackage(files []*ast.File) []desc {
	sc := pkgScope{values: map[string]ast.Expr{"Namespace": &ast.BasicLit{Kind: token.STRING, Value: `"hccl_exporter"`}}, funcs: map[string]*ast.FuncDecl{}, files: files}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok {
						for i, n := range vs.Names {
							if i < len(vs.Values) {
								sc.values[n.Name] = vs.Values[i]
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil {
					sc.funcs[d.Name.Name] = d
				}
			}
		}
	}
	var out []desc
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isSel(call.Fun, "prometheus", "NewDesc") || len(call.Args) < 3 {
				return true
			}
			fn := enclosingFunc(f, call)
			out = append(out, sc.descs(call, fn)...)
			return true
		})
	}
	return out
}

// descs resolves one NewDesc call. When its name or labels are parameters
// of the enclosing helper fn, every call of fn in the package is resolved
// with that call's arguments bound to the parameters.
func (sc pkgScope) descs(call *ast.CallExpr, fn *ast.FuncDecl) []desc {
	name, nameOK := sc.str(call.Args[0], nil)
	labels, labelsOK := sc.strs(call.Args[2], nil)
	if nameOK && labelsOK {
		return []desc{{name, labels}}
	}
	if fn == nil {
		return nil
	}
	var out []desc
	for _, f := range sc.files {
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := c.Fun.(*ast.Ident); !ok || id.Name != fn.Name.Name {
				return true
			}
			bind := map[string]ast.Expr{}
			i := 0
			for _, field := range fn.Type.Params.List {
				for _, pn := range field.Names {
					if i < len(c.Args) {
						bind[pn.Name] = c.Args[i]
					}
					i++
				}
			}
			n1, ok1 := sc.str(call.Args[0], bind)
			l1, ok2 := sc.strs(call.Args[2], bind)
			if ok1 && ok2 {
				out = append(out, desc{n1, l1})
			}
			return true
		})
	}
	return out
}

func (sc pkgScope) lookup(name string, bind map[string]ast.Expr) (ast.Expr, bool) {
	if e, ok := bind[name]; ok {
		return e, true
	}
	e, ok := sc.values[name]
	return e, ok
}

func (sc pkgScope) str(e ast.Expr, bind map[string]ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.Ident:
		if v, ok := sc.lookup(x.Name, bind); ok {
			return sc.str(v, nil)
		}
	case *ast.SelectorExpr: // collector.Namespace
		if v, ok := sc.values[x.Sel.Name]; ok {
			return sc.str(v, nil)
		}
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			a, ok1 := sc.str(x.X, bind)
			b, ok2 := sc.str(x.Y, bind)
			return a + b, ok1 && ok2
		}
	case *ast.CallExpr:
		if isSel(x.Fun, "prometheus", "BuildFQName") && len(x.Args) == 3 {
			var parts []string
			for _, a := range x.Args {
				s, ok := sc.str(a, bind)
				if !ok {
					return "", false
				}
				if s != "" {
					parts = append(parts, s)
				}
			}
			return strings.Join(parts, "_"), true
		}
	}
	return "", false
}

func (sc pkgScope) strs(e ast.Expr, bind map[string]ast.Expr) ([]string, bool) {
	switch x := e.(type) {
	case *ast.Ident:
		if x.Name == "nil" {
			return nil, true
		}
		if v, ok := sc.lookup(x.Name, bind); ok {
			return sc.strs(v, nil)
		}
	case *ast.CompositeLit:
		var out []string
		for _, el := range x.Elts {
			s, ok := sc.str(el, bind)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	case *ast.CallExpr:
		if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "append" && len(x.Args) > 0 {
			out, ok := sc.strs(x.Args[0], bind)
			if !ok {
				return nil, false
			}
			out = slices.Clone(out)
			for _, a := range x.Args[1:] {
				s, ok := sc.str(a, bind)
				if !ok {
					return nil, false
				}
				out = append(out, s)
			}
			return out, true
		}
	}
	return nil, false
}

func isSel(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkg
}

func enclosingFunc(f *ast.File, n ast.Node) *ast.FuncDecl {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Pos() <= n.Pos() && n.End() <= fd.End() {
			return fd
		}
	}
	return nil
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	metricName = regexp.MustCompile(`^[a-z][a-z0-9_]*(\{[^}]*\})?[a-z0-9_]*(\{.*\})?$`)
	labelName  = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// readmeMetrics parses README's metric table: name → sorted label names.
// A row's first cell names metrics (`a_{x,y}_b` expands; a trailing
// `{label}` or `{label="v"}` gives that metric's own labels; "(per
// `lane`)" adds a label to the row); its second cell lists the row's labels
// in backticks (values after ∈ are not backticked).
func readmeMetrics(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Metrics\n")
	if !ok {
		t.Fatal("README has no ## Metrics section")
	}
	out := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := splitRow(line)
		if len(cells) < 3 || cells[0] == "metric" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		var rowLabels []string
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			if labelName.MatchString(m[1]) {
				rowLabels = append(rowLabels, m[1])
			}
		}
		type named struct {
			name   string
			labels []string
			own    bool
		}
		var names []named
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			tok := m[1]
			if labelName.MatchString(tok) && !ownMetric(tok) {
				rowLabels = append(rowLabels, tok) // (per `lane`)
				continue
			}
			if !metricName.MatchString(tok) {
				continue
			}
			base, own, hasOwn := trailingLabels(tok)
			for _, n := range expand(base) {
				names = append(names, named{n, own, hasOwn})
			}
		}
		for _, n := range names {
			labels := rowLabels
			if n.own {
				labels = n.labels
			}
			out[n.name] = slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(labels)))))
		}
	}
	return out
}

// splitRow splits a Markdown table row at the pipes that are not escaped.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return nil
	}
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return cells
}

// trailingLabels splits `name{a,b}` or `name{label="v"|"w"}` into the name
// and its label names.
func trailingLabels(tok string) (string, []string, bool) {
	if !strings.HasSuffix(tok, "}") {
		return tok, nil, false
	}
	i := strings.LastIndex(tok, "{")
	inner := tok[i+1 : len(tok)-1]
	if strings.Contains(inner, ",") && !strings.Contains(inner, "=") && i > 0 && tok[i-1] == '_' {
		return tok, nil, false // a_{x,y} is an expansion, not labels
	}
	var labels []string
	for _, part := range strings.Split(inner, ",") {
		l, _, _ := strings.Cut(part, "=")
		l = strings.TrimSpace(l)
		if l != "" {
			labels = append(labels, l)
		}
	}
	return tok[:i], labels, true
}

// expand expands a_{x,y}_b into a_x_b and a_y_b.
func expand(s string) []string {
	i := strings.Index(s, "{")
	if i < 0 {
		return []string{s}
	}
	j := strings.Index(s[i:], "}")
	if j < 0 {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[i+1:i+j], ",") {
		out = append(out, expand(s[:i]+alt+s[i+j+1:])...)
	}
	return out
}

func TestReadmeRowParsing(t *testing.T) {
	got := expand("ascend_roce_{rx,tx}_pfc_{a,b}")
	if want := []string{"ascend_roce_rx_pfc_a", "ascend_roce_rx_pfc_b", "ascend_roce_tx_pfc_a", "ascend_roce_tx_pfc_b"}; !slices.Equal(got, want) {
		t.Errorf("expand = %q", got)
	}
	for tok, want := range map[string][]string{
		`hccl_exporter_label_values_dropped_total{label="kubelet_pod"|"kubelet_label_length"}`: {"label"},
		`hccl_exporter_log_unparsable_lines_total{format}`:                                     {"format"},
		`hccl_link_setup_processes{npu,chip}`:                                                  {"npu", "chip"},
	} {
		if _, labels, ok := trailingLabels(tok); !ok || !slices.Equal(labels, want) {
			t.Errorf("trailingLabels(%q) = %q", tok, labels)
		}
	}
	if _, _, ok := trailingLabels("ascend_roce_{rx,tx}"); ok {
		t.Error("an expansion read as labels")
	}
	if cells := splitRow(`| a \| b | c |`); len(cells) != 2 || cells[0] != "a | b" {
		t.Errorf("splitRow = %q", cells)
	}
}
