package sqlstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPadIDs(t *testing.T) {
	assert.Equal(t, []any{int64(7)}, padIDs([]int64{7}))
	assert.Equal(t, []any{int64(1), int64(2), int64(3), int64(3)}, padIDs([]int64{1, 2, 3}))
	assert.Len(t, padIDs(make([]int64, 100)), 128)
	assert.Len(t, padIDs(make([]int64, 256)), 256)
	assert.Len(t, padIDs(make([]int64, 300)), 512)
	assert.Len(t, padIDs(make([]int64, 1100)), 1100, "lists past maxPadded keep their length")
	assert.Empty(t, padIDs(nil))
}

func TestChunks(t *testing.T) {
	assert.Equal(t, []int{128, 64, 8}, chunks(200))
	assert.Equal(t, []int{1}, chunks(1))
	assert.Equal(t, []int{256, 256, 2}, chunks(514))
	assert.Empty(t, chunks(0))
	for n := 1; n <= 600; n++ {
		sum := 0
		for _, c := range chunks(n) {
			assert.Equal(t, 0, c&(c-1), "chunk %d of %d is a power of two", c, n)
			sum += c
		}
		assert.Equal(t, n, sum)
	}
}

func TestValuesList(t *testing.T) {
	assert.Equal(t, "(?,?),(?,?),(?,?)", valuesList(3, 2))
	assert.Equal(t, 5, strings.Count(valuesList(5, 14), "("))
}
