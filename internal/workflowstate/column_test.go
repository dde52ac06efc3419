package workflowstate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// A nullable JSON column reads as its array or object; empty, scalar or
// malformed values read as nil, as Queuety's row_nullable_json_array.
func TestJSONColumn(t *testing.T) {
	obj, ok := workflowstate.JSONColumn([]byte(`{"a":1}`)).(*phpjson.Object)
	if assert.True(t, ok, "an object column") {
		v, _ := obj.Get("a")
		assert.Equal(t, int64(1), v)
	}
	assert.Equal(t, []any{"x"}, workflowstate.JSONColumn([]byte(`["x"]`)), "an array column")
	for _, raw := range []string{"", "3", `"s"`, "null", "{"} {
		assert.Nil(t, workflowstate.JSONColumn([]byte(raw)), "column %q", raw)
	}
}
