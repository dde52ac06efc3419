package apicheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/queuety/queuety-go"

// userFacing are the packages applications import. Their exported API may
// name types from each other, from queuetytype and from outside the module,
// never from store/driver or an internal package.
var userFacing = []string{
	module + "/queuetytype",
	module + "/queuety",
	module + "/builder",
	module + "/machine",
	module + "/worker",
	module + "/queuetytest",
	module + "/middleware",
	module + "/ui",
	module + "/deadline",
}

// forbidden reports whether a type from package path may not appear in the
// user-facing API.
func forbidden(path string) bool {
	return path == module+"/store/driver" ||
		strings.HasPrefix(path, module+"/internal/") ||
		strings.Contains(path, "/internal/")
}

// loadPackages type-checks pkgs from the compiler's export data, which go
// list -export builds (or finds in the build cache).
func loadPackages(t *testing.T, pkgs []string) map[string]*types.Package {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Export", "--"}, pkgs...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return openFile(file)
	})
	res := map[string]*types.Package{}
	for _, path := range pkgs {
		p, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		res[path] = p
	}
	return res
}

// leakChecker walks the exported API of one package and records every
// place it names a forbidden type.
type leakChecker struct {
	leaks []string
}

func (c *leakChecker) report(where string, what string) {
	c.leaks = append(c.leaks, fmt.Sprintf("%s mentions %s", where, what))
}

// typ checks a type expression as written in an exported declaration. It
// does not descend into named types of other packages: those are either
// forbidden themselves or checked as part of their own package.
func (c *leakChecker) typ(where string, t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		obj := t.Obj()
		if obj.Pkg() != nil && forbidden(obj.Pkg().Path()) {
			c.report(where, obj.Pkg().Path()+"."+obj.Name())
			return
		}
		if ta := t.TypeArgs(); ta != nil {
			for i := 0; i < ta.Len(); i++ {
				c.typ(where, ta.At(i))
			}
		}
		if obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() && !obj.Exported() {
			c.typ(where, t.Rhs())
		}
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() != nil && forbidden(obj.Pkg().Path()) {
			c.report(where, obj.Pkg().Path()+"."+obj.Name())
			return
		}
		if ta := t.TypeArgs(); ta != nil {
			for i := 0; i < ta.Len(); i++ {
				c.typ(where, ta.At(i))
			}
		}
	case *types.Pointer:
		c.typ(where, t.Elem())
	case *types.Slice:
		c.typ(where, t.Elem())
	case *types.Array:
		c.typ(where, t.Elem())
	case *types.Map:
		c.typ(where, t.Key())
		c.typ(where, t.Elem())
	case *types.Chan:
		c.typ(where, t.Elem())
	case *types.Signature:
		c.tuple(where, t.Params())
		c.tuple(where, t.Results())
	case *types.Tuple:
		c.tuple(where, t)
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			f := t.Field(i)
			if f.Exported() || f.Embedded() {
				c.typ(where+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for i := 0; i < t.NumEmbeddeds(); i++ {
			c.typ(where, t.EmbeddedType(i))
		}
		for i := 0; i < t.NumExplicitMethods(); i++ {
			m := t.ExplicitMethod(i)
			c.typ(where+"."+m.Name(), m.Type())
		}
	case *types.Union:
		for i := 0; i < t.Len(); i++ {
			c.typ(where, t.Term(i).Type())
		}
	case *types.TypeParam:
		c.typ(where, t.Constraint())
	case *types.Basic:
	default:
		c.report(where, fmt.Sprintf("unhandled type %T", t))
	}
}

func (c *leakChecker) tuple(where string, t *types.Tuple) {
	for i := 0; i < t.Len(); i++ {
		c.typ(where, t.At(i).Type())
	}
}

// pkg checks every exported identifier of p: constants' and variables'
// types, function signatures, alias targets, and for defined types their
// underlying type (exported and embedded fields, interface methods) and
// their exported methods.
func (c *leakChecker) pkg(p *types.Package) {
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		where := p.Name() + "." + name
		switch obj := obj.(type) {
		case *types.Const, *types.Var, *types.Func:
			c.typ(where, obj.Type())
		case *types.TypeName:
			switch t := obj.Type().(type) {
			case *types.Alias:
				c.typ(where+" (alias)", t.Rhs())
			case *types.Named:
				if tp := t.TypeParams(); tp != nil {
					for i := 0; i < tp.Len(); i++ {
						c.typ(where, tp.At(i).Constraint())
					}
				}
				c.typ(where, t.Underlying())
				for i := 0; i < t.NumMethods(); i++ {
					m := t.Method(i)
					if m.Exported() {
						c.typ(where+"."+m.Name(), m.Type())
					}
				}
			}
		}
	}
}

// TestUserAPINamesNoInternalTypes fails when an exported identifier of a
// user-facing package names a type from store/driver or an internal
// package: in a function's parameters or results, an exported struct
// field, an alias target, a constant's or variable's type, or a method.
func TestUserAPINamesNoInternalTypes(t *testing.T) {
	pkgs := loadPackages(t, userFacing)
	var leaks []string
	for _, path := range userFacing {
		c := &leakChecker{}
		c.pkg(pkgs[path])
		leaks = append(leaks, c.leaks...)
	}
	sort.Strings(leaks)
	if len(leaks) > 0 {
		t.Errorf("%d exported identifiers name store/driver or internal types:\n\t%s",
			len(leaks), strings.Join(leaks, "\n\t"))
	}
}
