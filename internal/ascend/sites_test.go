package ascend

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// chipIDBirthplaces are the only places outside tests that build a ChipID
// from its parts, each where a chip's id is first read off the machine;
// every other package carries the ChipID it was handed (a row's, a chip's,
// a reading's) instead of rebuilding it from loose npu and chip strings:
//
//   - internal/npusmi/parse.go: npu-smi's process table, whose NPU cell
//     holds the NPU id and, on multi-chip NPUs, the chip's index (chip
//     rows fill the embedded ChipID field by field as the table is read).
//   - collectors/hccn/devices.go: without npu-smi, /dev/davinciN is the
//     only name of a chip, read as npu N, chip 0.
//
// The number is how many ChipID literals the file holds.
var chipIDBirthplaces = map[string]int{
	"internal/npusmi/parse.go":   1,
	"collectors/hccn/devices.go": 1,
}

// TestChipIDBuiltWhereBorn: no non-test Go file of the module builds an
// ascend.ChipID (a composite literal, or one elided in a slice, array or
// map literal of ChipIDs, or a conversion) outside chipIDBirthplaces.
func TestChipIDBuiltWhereBorn(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
	found := map[string][]string{}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		files++
		if sites := chipIDLiterals(t, rel, src); len(sites) > 0 {
			found[rel] = sites
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: the check is broken", files, root)
	}
	var paths []string
	for p := range found {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if want, ok := chipIDBirthplaces[p]; !ok || len(found[p]) > want {
			t.Errorf("%s builds an ascend.ChipID at %s: carry the ChipID the chip came with (a row's, a chip's, a reading's); "+
				"only the places that first read a chip's id build one (chipIDBirthplaces)", p, strings.Join(found[p], ", "))
		}
	}
	for p, want := range chipIDBirthplaces {
		if got := len(found[p]); got < want {
			t.Errorf("%s builds %d ascend.ChipID literals, chipIDBirthplaces allows %d: lower it", p, got, want)
		}
	}
}

// chipIDLiterals returns the line:column of every ChipID src builds.
func chipIDLiterals(t *testing.T, path string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	// The names ChipID goes by in the file: ascend.ChipID (or the
	// import's own name), and ChipID inside package ascend.
	const ascendPath = "github.com/hccl-exporter/hccl_exporter/internal/ascend"
	qualifiers := map[string]bool{}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == ascendPath {
			name := "ascend"
			if imp.Name != nil {
				name = imp.Name.Name
			}
			qualifiers[name] = true
		}
	}
	local := f.Name.Name == "ascend"
	isChipID := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && qualifiers[x.Name] && e.Sel.Name == "ChipID"
		case *ast.Ident:
			return local && e.Name == "ChipID"
		}
		return false
	}
	var out []string
	at := func(n ast.Node) {
		p := fset.Position(n.Pos())
		out = append(out, strconv.Itoa(p.Line)+":"+strconv.Itoa(p.Column))
	}
	elided := func(e ast.Expr) {
		if c, ok := e.(*ast.CompositeLit); ok && c.Type == nil {
			at(c)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if isChipID(n.Type) {
				at(n)
				return true
			}
			switch typ := n.Type.(type) {
			case *ast.ArrayType: // []ChipID{{…}}, [n]ChipID{{…}}
				if isChipID(typ.Elt) {
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							e = kv.Value
						}
						elided(e)
					}
				}
			case *ast.MapType: // map[ChipID]V{{…}: v}, map[K]ChipID{k: {…}}
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if isChipID(typ.Key) {
						elided(kv.Key)
					}
					if isChipID(typ.Value) {
						elided(kv.Value)
					}
				}
			}
		case *ast.CallExpr: // ChipID(x): a conversion from a look-alike struct
			if isChipID(n.Fun) && len(n.Args) == 1 {
				at(n)
			}
		}
		return true
	})
	return out
}

// TestChipIDLiterals: the check finds every way of building a ChipID and
// nothing else.
func TestChipIDLiterals(t *testing.T) {
	const src = `package p

import (
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	as "github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

type lookAlike struct{ NPU, Chip string }

var (
	a = ascend.ChipID{NPU: "0", Chip: "0"}                       // 1
	b = as.ChipID{}                                              // 2
	c = []ascend.ChipID{{NPU: "0"}, {Chip: "1"}}                 // 3, 4
	d = map[ascend.ChipID]int{{NPU: "0"}: 1}                     // 5
	e = map[string]ascend.ChipID{"x": {NPU: "0"}}                // 6
	f = ascend.ChipID(lookAlike{})                               // 7
	g = map[string]ascend.ChipID{}                               // not a ChipID
	h = map[ascend.ChipID]int{a: 1}                              // not one
	i = ascend.Process{ChipID: a}                                // carried, not built
	j = []ascend.ChipID{a, b}                                    // carried
)
`
	got := chipIDLiterals(t, "p.go", []byte(src))
	if len(got) != 7 {
		t.Errorf("found %d ChipID literals, want 7: %v", len(got), got)
	}
	local := chipIDLiterals(t, "q.go", []byte("package ascend\n\nvar x, y = ChipID{}, []ChipID{{}}\n"))
	if len(local) != 2 {
		t.Errorf("inside package ascend: found %d, want 2: %v", len(local), local)
	}
}
