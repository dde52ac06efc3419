package phpjson

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMarshalWithUnescapedSlashes(t *testing.T) {
	o := NewObject()
	o.Set("url", "https://example.com/a/b")
	o.Set("path", `C:\dir/file`)
	o.Set("é", "ü/")
	b, err := MarshalWith(o, UnescapedSlashes)
	require.NoError(t, err)
	// json_encode(['url' => 'https://example.com/a/b', 'path' => 'C:\dir/file', 'é' => 'ü/'], JSON_UNESCAPED_SLASHES)
	assert.Equal(t, `{"url":"https://example.com/a/b","path":"C:\\dir/file","\u00e9":"\u00fc/"}`, string(b))
	b, err = MarshalWith(o, 0)
	require.NoError(t, err)
	plain, err := Marshal(o)
	require.NoError(t, err)
	assert.Equal(t, string(plain), string(b), "no flags: json_encode's defaults")
	assert.Contains(t, string(b), `https:\/\/example.com\/a\/b`)
}
