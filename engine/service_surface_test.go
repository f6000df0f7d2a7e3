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
