package stratum

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"
)

// promisedPackages are the packages of this module a user may see in the
// library's exported surface: the library itself and review.
var promisedPackages = map[string]bool{
	"github.com/stratum-go/stratum/engine/stratum": true,
	"github.com/stratum-go/stratum/review":         true,
}

// TestSurfaceNamesNoUnpromisedType: no exported function, method, type or
// field of the library names a type of a package of this module that is
// not promised (engine, engine/state, engine/internal/…): a user could not
// rely on it, and Options.Store in particular is the library's own Store,
// not the engine's port.
func TestSurfaceNamesNoUnpromisedType(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for name, f := range p.Files {
			imports := map[string]string{} // local name → path
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				local := path[strings.LastIndex(path, "/")+1:]
				if im.Name != nil {
					local = im.Name.Name
				}
				imports[local] = path
			}
			check := func(where string, n ast.Node) {
				if n == nil {
					return
				}
				ast.Inspect(n, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					id, ok := sel.X.(*ast.Ident)
					if !ok {
						return true
					}
					path := imports[id.Name]
					if strings.HasPrefix(path, "github.com/stratum-go/stratum/") && !promisedPackages[path] {
						t.Errorf("%s: %s names %s.%s (%s is not a promised package)", fset.Position(sel.Pos()), where, id.Name, sel.Sel.Name, path)
					}
					return false
				})
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
						continue
					}
					check(d.Name.Name, d.Type)
				case *ast.GenDecl:
					for _, s := range d.Specs {
						ts, ok := s.(*ast.TypeSpec)
						if !ok || !ts.Name.IsExported() {
							continue
						}
						checkExportedParts(ts.Name.Name, ts.Type, check)
						if ts.TypeParams != nil {
							check(ts.Name.Name, ts.TypeParams)
						}
					}
				}
			}
			_ = name
		}
	}
}

// checkExportedParts checks a type's definition, skipping unexported struct
// fields and interface methods (not part of what a user sees).
func checkExportedParts(name string, typ ast.Expr, check func(string, ast.Node)) {
	switch tt := typ.(type) {
	case *ast.StructType:
		for _, f := range tt.Fields.List {
			if len(f.Names) == 0 || f.Names[0].IsExported() {
				check(name, f.Type)
			}
		}
	case *ast.InterfaceType:
		for _, m := range tt.Methods.List {
			if len(m.Names) == 0 || m.Names[0].IsExported() {
				check(name, m.Type)
			}
		}
	default:
		check(name, typ)
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	t := recv.List[0].Type
	for {
		switch tt := t.(type) {
		case *ast.StarExpr:
			t = tt.X
		case *ast.IndexExpr:
			t = tt.X
		case *ast.IndexListExpr:
			t = tt.X
		case *ast.Ident:
			return tt.IsExported()
		default:
			return false
		}
	}
}
