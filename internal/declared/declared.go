// Package declared reads what a Go package declares from its source files: the constants of a
// type, the Prometheus metric vectors. Tests use it to check that a list kept in code (the
// label values created at zero, the series a binary exports at start) names everything
// declared, so that a new constant or metric without its entry fails a test instead of being
// forgotten.
package declared

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// files parses the package in dir, without its _test.go files.
func files(dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading package %s: %w", dir, err)
	}
	fset := token.NewFileSet()
	var out []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", name, err)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	return out, nil
}

// Consts returns the values of the string constants of type typ declared in the package in
// dir, sorted. A constant of the type whose value is not a string literal is an error: its
// value could not be compared with a list.
func Consts(dir, typ string) ([]string, error) {
	fs, err := files(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fs {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
					continue
				}
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return nil, fmt.Errorf("constant %s of type %s is not a string literal", vs.Names[i].Name, typ)
					}
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Metric is a metric vector built with promauto.New*Vec (or prometheus.New*Vec).
type Metric struct {
	// Name is the full name, Namespace_Subsystem_Name, as exported (a histogram's series
	// add _bucket, _sum and _count).
	Name   string
	Type   string // Counter, Gauge, Histogram or Summary
	Labels []string
}

// Metrics returns the metric vectors the package in dir declares, sorted by name. idents
// gives the values of the identifiers used for Namespace and Subsystem (plugin.Namespace,
// pluginName, ...), by their source text; one missing is an error. A vector whose options or
// labels are not literals in the call is an error: what it exports cannot be read here.
func Metrics(dir string, idents map[string]string) ([]Metric, error) {
	fs, err := files(dir)
	if err != nil {
		return nil, err
	}
	var out []Metric
	var problem error
	for _, f := range fs {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || problem != nil {
				return problem == nil
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			typ, isVec := strings.CutSuffix(strings.TrimPrefix(sel.Sel.Name, "New"), "Vec")
			if !ok || (pkg.Name != "promauto" && pkg.Name != "prometheus") || !isVec || !strings.HasPrefix(sel.Sel.Name, "New") {
				return true
			}
			m, err := vector(call, typ, idents)
			if err != nil {
				problem = fmt.Errorf("%s.%s: %w", pkg.Name, sel.Sel.Name, err)
				return false
			}
			out = append(out, m)
			return true
		})
	}
	if problem != nil {
		return nil, problem
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// vector reads one New*Vec call: its options literal and its label list literal.
func vector(call *ast.CallExpr, typ string, idents map[string]string) (Metric, error) {
	if len(call.Args) != 2 {
		return Metric{}, fmt.Errorf("%d arguments, want the options and the labels", len(call.Args))
	}
	opts, ok := call.Args[0].(*ast.CompositeLit)
	if !ok {
		return Metric{}, fmt.Errorf("the options are not a literal")
	}
	parts := map[string]string{}
	for _, e := range opts.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return Metric{}, fmt.Errorf("the options are not keyed")
		}
		key := fmt.Sprint(kv.Key)
		if key != "Namespace" && key != "Subsystem" && key != "Name" {
			continue
		}
		v, err := stringValue(kv.Value, idents)
		if err != nil {
			return Metric{}, fmt.Errorf("%s: %w", key, err)
		}
		parts[key] = v
	}
	if parts["Name"] == "" {
		return Metric{}, fmt.Errorf("no Name")
	}
	var name []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			name = append(name, parts[k])
		}
	}
	labels, ok := call.Args[1].(*ast.CompositeLit)
	if !ok {
		return Metric{}, fmt.Errorf("%s: the labels are not a literal", parts["Name"])
	}
	m := Metric{Name: strings.Join(name, "_"), Type: typ}
	for _, e := range labels.Elts {
		l, err := stringValue(e, nil)
		if err != nil {
			return Metric{}, fmt.Errorf("%s: label: %w", m.Name, err)
		}
		m.Labels = append(m.Labels, l)
	}
	return m, nil
}

// stringValue is the value of a string literal, or of an identifier idents knows.
func stringValue(e ast.Expr, idents map[string]string) (string, error) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			return strconv.Unquote(v.Value)
		}
	case *ast.Ident:
		if s, ok := idents[v.Name]; ok {
			return s, nil
		}
		return "", fmt.Errorf("identifier %s: value unknown", v.Name)
	case *ast.SelectorExpr:
		text := fmt.Sprintf("%v.%s", v.X, v.Sel.Name)
		if s, ok := idents[text]; ok {
			return s, nil
		}
		return "", fmt.Errorf("identifier %s: value unknown", text)
	}
	return "", fmt.Errorf("not a string literal")
}
