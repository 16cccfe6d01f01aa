package text

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The packages that print what peers send and what files hold.
var printers = []string{"bench", "oob", "fleet", "fleet/pairs", "report", "report/html", "cmd/rdmabench", "sweep"}

// rawFields are the string fields of the protocol's and the results' records that a
// peer or a file fills: printed, they go through Clean or Quote.
var rawFields = map[string]bool{
	"Op": true, "Test": true, "Host": true, "HostA": true, "HostB": true, "Tool": true, "Error": true, "Target": true,
	"Note": true, "CountersNote": true, "Transport": true, "Mode": true, "Label": true, "Server": true, "Sync": true,
	"Landing": true, "MR": true, "Baseline": true, "Counters": true, "Model": true, "Driver": true, "FirmwareVer": true,
	"NodeGUID": true, "GID": true, "GIDType": true, "LinkLayer": true, "Msg": true, "Type": true, "Pattern": true,
	"Detail": true, "Why": true, "Side": true, "ClockNote": true, "Hosts": true, "Err": true, "Notes": true,
}

// printFuncs are the calls that print or format their arguments; so is any call with
// a format string (a string literal with a %) among its arguments, such as a closure
// that formats.
var printFuncs = map[string]bool{
	"Printf": true, "Sprintf": true, "Fprintf": true, "Errorf": true, "Fatalf": true, "Println": true, "Fprintln": true,
	"Print": true, "Fprint": true, "Sprint": true, "logf": true, "Append": true,
}

// TestNoRawPeerStringsPrinted is a lint: a string field that a peer or a file fills
// (rawFields) is never an argument of a print or format call as it is. Wrap it in
// Clean or Quote; where the value was validated against a fixed set just before, or
// is this host's own (its flags, its devices' sysfs), say so on the line with a
// "// text: validated", "// text: cleaned above" or "// text: local" comment. It knows fields by name, not by
// type: a field outside rawFields, or a value passed through a variable, escapes it.
func TestNoRawPeerStringsPrinted(t *testing.T) {
	root := filepath.Join("..", "..")
	var bad []string
	for _, dir := range printers {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, filepath.Join(root, dir), func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			for name, f := range pkg.Files {
				exempt := map[int]bool{}
				for _, cg := range f.Comments {
					for _, c := range cg.List {
						if strings.Contains(c.Text, "text: validated") || strings.Contains(c.Text, "text: local") || strings.Contains(c.Text, "text: cleaned") {
							exempt[fset.Position(c.Pos()).Line] = true
						}
					}
				}
				ast.Inspect(f, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || !printFuncs[callName(call)] && !hasFormat(call) {
						return true
					}
					for i, arg := range call.Args {
						if i == 0 && strings.HasPrefix(callName(call), "Fprint") {
							continue // the writer
						}
						e := ast.Unparen(arg)
						if ix, ok := e.(*ast.IndexExpr); ok { // out.Hosts[i]
							e = ix.X
						}
						if conv, ok := e.(*ast.CallExpr); ok && len(conv.Args) == 1 { // string(c.Test)
							if id, ok := conv.Fun.(*ast.Ident); ok && id.Name == "string" {
								e = conv.Args[0]
							}
						}
						sel, ok := e.(*ast.SelectorExpr)
						if !ok || !rawFields[sel.Sel.Name] {
							continue
						}
						if line := fset.Position(arg.Pos()).Line; !exempt[line] {
							rel, _ := filepath.Rel(root, name)
							bad = append(bad, fmt.Sprintf("%s:%d: %s printed raw", rel, line, exprText(sel)))
						}
					}
					return true
				})
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("%d peer- or file-derived strings printed without text.Clean or text.Quote:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

func hasFormat(c *ast.CallExpr) bool {
	for _, a := range c.Args {
		if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "%") {
			return true
		}
	}
	return false
}

func callName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprText(e.X) + "." + e.Sel.Name
	}
	return "?"
}
