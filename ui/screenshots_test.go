package ui

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneScreenshotVariable checks that the browser tests, the docs and
// CI name one variable for the screenshots' directory: EnvScreenshots
// (the CHANGELOG may name the old ones).
func TestOneScreenshotVariable(t *testing.T) {
	re := regexp.MustCompile(`QUEUETY_[A-Z_]*SCREENSHOTS`)
	var files []string
	for _, pattern := range []string{"*.go", "../docs/*.md", "../*.md", "../.github/workflows/*", "../.ci/*"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, m...)
	}
	found := 0
	for _, f := range files {
		if filepath.Base(f) == "CHANGELOG.md" {
			continue // the history names the old spellings
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, name := range re.FindAllString(string(b), -1) {
			found++
			assert.Equal(t, EnvScreenshots, name, "%s names another screenshots variable", f)
		}
	}
	assert.Positive(t, found, "the variable is documented")
}
