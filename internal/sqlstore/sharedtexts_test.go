package sqlstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// sharedTexts converts each distinct slice once and never hands out the
// text of another slice: a different length, or equal bytes elsewhere,
// are converted on their own; nil stays SQL NULL.
func TestSharedTextsConvertEachSliceOnce(t *testing.T) {
	var st sharedTexts
	state := []byte(`{"a":1}`)
	assert.Equal(t, `{"a":1}`, st.arg(state))
	assert.Equal(t, `{"a":1}`, st.arg(state))
	assert.Equal(t, `{"a"`, st.arg(state[:4]), "a prefix of a converted slice is its own text")
	assert.Equal(t, `{"a":1}`, st.arg([]byte(`{"a":1}`)))
	assert.Nil(t, st.arg(nil))
	assert.Equal(t, "", st.arg([]byte{}))
	for i := range 10 {
		b := []byte{byte('a' + i)}
		assert.Equal(t, string(b), st.arg(b), "slice %d", i)
	}
	assert.Equal(t, `{"a":1}`, st.arg(state), "a slice converted long ago is converted again")

	allocs := testing.AllocsPerRun(20, func() {
		var st sharedTexts
		for range 4 {
			_ = st.arg(state)
		}
	})
	assert.LessOrEqual(t, allocs, 2.0, "one slice used four times is converted (and boxed) once")
}
