package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"sort"
	"strings"
	"testing"
)

// maxServiceMethods bounds Service's exported methods: Service is the
// state machine of spec flows (one method per transition, the event feed,
// the sweeps); reads are its Query, runner leases its Leases, and a Go
// program's flows are Library's.
const maxServiceMethods = 30

// TestServiceStaysTheStateMachine keeps Service within maxServiceMethods
// exported methods, none of them the library's.
func TestServiceStaysTheStateMachine(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, f := range pkgs["engine"].Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Service" {
					methods = append(methods, fd.Name.Name)
				}
			}
		}
	}
	sort.Strings(methods)
	if len(methods) > maxServiceMethods {
		t.Errorf("Service has %d exported methods, at most %d: %v; put reads on Query, leases on Leases, a request's variants in its request struct",
			len(methods), maxServiceMethods, methods)
	}
	for _, m := range methods {
		if strings.Contains(m, "Library") || strings.Contains(m, "Review") {
			t.Errorf("Service.%s looks like the library's: a Go program's flows are Library's", m)
		}
	}
}

// maxStructFields bounds the fields of an exported struct of package
// engine: a struct past it holds more than one thing (an event's data is
// one payload type per kind, a transition's input one request struct).
const maxStructFields = 20

// TestNoExportedStructOverMaxFields keeps every exported struct type of
// package engine within maxStructFields fields (an embedded field counts
// one).
func TestNoExportedStructOverMaxFields(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	structs := 0
	for _, f := range pkgs["engine"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			structs++
			fields := 0
			for _, fl := range st.Fields.List {
				fields += max(1, len(fl.Names))
			}
			if fields > maxStructFields {
				t.Errorf("%s: %s has %d fields, at most %d: split it by what its fields are for",
					fset.Position(ts.Pos()), ts.Name.Name, fields, maxStructFields)
			}
			return true
		})
	}
	if structs == 0 {
		t.Fatal("no exported struct found")
	}
}
