package stratum

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// insiderWords are what users of the public packages cannot follow:
// section numbers of a specification they do not have, the design
// material's "seed" documents, and paths of this repository's insides.
var insiderWords = regexp.MustCompile(`§|\bseeds?\b|/work/|engine/internal|\.ci/|library-api`)

// TestPublicDocsWrittenForUsers keeps the go doc of the promised packages
// (this one and review) free of insiders' references.
func TestPublicDocsWrittenForUsers(t *testing.T) {
	for _, dir := range []string{".", "../../review"} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			files := make([]*ast.File, 0, len(p.Files))
			for _, f := range p.Files {
				files = append(files, f)
			}
			d, err := doc.NewFromFiles(fset, files, "example.com/"+p.Name)
			if err != nil {
				t.Fatal(err)
			}
			check := func(name, text string) {
				if m := insiderWords.FindString(text); m != "" {
					t.Errorf("%s: the doc of %s says %q", dir, name, m)
				}
			}
			check("the package", d.Doc)
			for _, c := range append(d.Consts, d.Vars...) {
				check(strings.Join(c.Names, ", "), c.Doc)
			}
			for _, f := range d.Funcs {
				check(f.Name, f.Doc)
			}
			for _, ty := range d.Types {
				check(ty.Name, ty.Doc)
				for _, f := range append(ty.Funcs, ty.Methods...) {
					check(ty.Name+"."+f.Name, f.Doc)
				}
				for _, c := range append(ty.Consts, ty.Vars...) {
					check(strings.Join(c.Names, ", "), c.Doc)
				}
				ast.Inspect(ty.Decl, func(n ast.Node) bool {
					if f, ok := n.(*ast.Field); ok && len(f.Names) > 0 && ast.IsExported(f.Names[0].Name) {
						check(ty.Name+"."+f.Names[0].Name, f.Doc.Text()+f.Comment.Text())
					}
					return true
				})
			}
		}
	}
}
