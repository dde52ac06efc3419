package readmetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/scanner"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Config says which module the snippets compile against and where the
// generated module goes.
type Config struct {
	// Root is the directory of the module the snippets import (it holds
	// go.mod and go.sum). Snippet files that are not absolute are relative
	// to it.
	Root string
	// WorkDir is an empty directory for the generated module.
	WorkDir string
	// Go is the go command; "go" when empty.
	Go string
}

// generatedModule is the module path of the generated module.
const generatedModule = "readmesnippets"

// Check wraps the snippets, writes each as a package of one module in
// cfg.WorkDir that requires the module at cfg.Root through a replace
// directive, and runs go build, then go vet, once over all of them. It
// returns nil when every snippet builds and passes vet, else an error
// listing each problem at its position in the Markdown files.
func Check(ctx context.Context, cfg Config, snippets []Snippet) error {
	if cfg.Go == "" {
		cfg.Go = "go"
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return err
	}
	if err := writeModule(root, cfg.WorkDir); err != nil {
		return err
	}

	var problems []string
	dirs := map[string]Snippet{} // package directory → snippet
	for i, s := range snippets {
		directive := s.File
		if !filepath.IsAbs(directive) {
			directive = filepath.Join(root, filepath.FromSlash(s.File))
		}
		w, err := Wrap(s, directive)
		if err != nil {
			problems = append(problems, fmt.Sprintf("# %s does not parse\n%s", s, parseError(err)))
			continue
		}
		dir := fmt.Sprintf("s%03d", i+1)
		if err := writeFiles(filepath.Join(cfg.WorkDir, dir), w.Files); err != nil {
			return err
		}
		dirs[dir] = s
	}

	if len(dirs) > 0 {
		out, err := goCmd(ctx, cfg, "build", "./...")
		if err == nil {
			out, err = goCmd(ctx, cfg, "vet", "./...")
		}
		if err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				return fmt.Errorf("running %s: %w", cfg.Go, err)
			}
			problems = append(problems, strings.TrimRight(explain(out, dirs), "\n"))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	msg := strings.Join(problems, "\n")
	msg = strings.ReplaceAll(msg, root+string(filepath.Separator), "")
	return fmt.Errorf("Go snippets in Markdown files fail go build or go vet:\n%s", strings.TrimRight(msg, "\n"))
}

// writeModule writes go.mod and go.sum of the generated module into dir:
// the requirements of the module at root, plus that module itself, replaced
// by its directory.
func writeModule(root, dir string) error {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	var modPath string
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n", generatedModule)
	for line := range strings.Lines(string(gomod)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && modPath == "" {
			modPath = strings.Trim(f[1], `"`)
			continue
		}
		b.WriteString(line)
	}
	if modPath == "" {
		return fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
	}
	fmt.Fprintf(&b, "\nrequire %s v0.0.0-00010101000000-000000000000\n\nreplace %s => %s\n", modPath, modPath, root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "go.sum"), gosum, 0o644)
}

// writeFiles writes files into the new directory dir.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// goCmd runs the go command in the generated module and returns its
// combined output.
func goCmd(ctx context.Context, cfg Config, args ...string) (string, error) {
	args = append(args[:1:1], append([]string{"-mod=mod"}, args[1:]...)...)
	cmd := exec.CommandContext(ctx, cfg.Go, args...)
	cmd.Dir = cfg.WorkDir
	// The generated module stands alone: no workspace, and none of the
	// caller's build flags (-race and the like do not change what compiles).
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// pkgHeader matches the go command's "# readmesnippets/s001" lines.
var pkgHeader = regexp.MustCompile(`^# ` + regexp.QuoteMeta(generatedModule) + `/(s\d+)$`)

// explain rewrites go command output so that each package header names
// its snippet's position in the Markdown files.
func explain(out string, dirs map[string]Snippet) string {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if m := pkgHeader.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			if s, ok := dirs[m[1]]; ok {
				fmt.Fprintf(&b, "# %s (generated package %s)\n", s, m[1])
				continue
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// parseError is the first error of a parse: the later ones mostly follow
// from it, and fall past the snippet's end.
func parseError(err error) string {
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return list[0].Error()
	}
	return err.Error()
}
