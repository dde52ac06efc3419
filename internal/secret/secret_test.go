package secret

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheck(t *testing.T) {
	for _, bad := range []string{"", "a", " ", "                    ", "s3cret", " 9c1f0e6b7a2d4c58", "9c1f0e6b7a2d4c58\n",
		strings.Repeat("a", 64), strings.Repeat("ab", 20), "abcabcabcabcabca"} {
		assert.Error(t, Check("token", bad), "%q", bad)
	}
	for _, good := range []string{"9c1f0e6b7a2d4c58", "9c1f0e6b7a2d4c58b3e1f09a6d7c2b41", "correct horse battery staple", "tok-3f9a1c7e5b2d8046"} {
		assert.NoError(t, Check("token", good), "%q", good)
	}
	err := Check("Options.Token", "s3cret")
	assert.EqualError(t, err, "Options.Token has 6 characters, want at least 16 (a random one: openssl rand -hex 16)")
}

func TestEqual(t *testing.T) {
	assert.True(t, Equal("9c1f0e6b7a2d4c58", "9c1f0e6b7a2d4c58"))
	assert.False(t, Equal("9c1f0e6b7a2d4c58", "9c1f0e6b7a2d4c5"))
	assert.False(t, Equal("", "x"))
}
