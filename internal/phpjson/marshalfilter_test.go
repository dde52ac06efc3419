package phpjson_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// MarshalFilter writes the very bytes of Marshal(o.Filter(keep)), and
// fails where it fails: on hand-made objects whose kept keys make a
// list, an object or nothing, and on every object stored in the PHP
// fixtures, with several filters.
func TestMarshalFilterMatchesFilter(t *testing.T) {
	filters := map[string]func(string) bool{
		"public": func(k string) bool { return !strings.HasPrefix(k, "_") },
		"all":    func(string) bool { return true },
		"none":   func(string) bool { return false },
		"odd":    func(k string) bool { return len(k)%2 == 1 },
	}
	same := func(t *testing.T, o *phpjson.Object) {
		t.Helper()
		for name, keep := range filters {
			want, wantErr := phpjson.Marshal(o.Filter(keep))
			got, err := phpjson.MarshalFilter(o, keep)
			if wantErr != nil {
				require.Error(t, err, name)
				continue
			}
			require.NoError(t, err, name)
			require.Equal(t, string(want), string(got), name)
		}
	}
	for _, text := range []string{
		`{}`, `[]`, `{"_a":1}`, `{"_a":1,"0":"x","1":"y"}`, `{"0":"x","_a":1,"1":"y"}`, `{"1":"x","_a":1,"0":"y"}`,
		`{"_steps":[1],"b":{"c":[{"d":"\/\u00e9"}]},"a":null,"_queue":"q","e":1.5}`, `[1,2,{"_x":3}]`,
	} {
		o, err := phpjson.DecodeObject([]byte(text))
		require.NoError(t, err, text)
		same(t, o)
	}
	same(t, nil)
	bad := phpjson.NewObject()
	bad.Set("a", "\xff")
	bad.Set("_b", "\xff")
	same(t, bad)

	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	objects := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		var f fixture
		require.NoError(t, json.Unmarshal(b, &f), file)
		for _, snap := range f.Snapshots {
			for _, rows := range snap.Tables {
				for _, row := range rows {
					for _, cell := range row {
						if cell == nil || !strings.HasPrefix(*cell, "{") {
							continue
						}
						o, err := phpjson.DecodeObject([]byte(*cell))
						if err != nil {
							continue
						}
						objects++
						same(t, o)
					}
				}
			}
		}
	}
	require.NotZero(t, objects)
	t.Logf("%d stored objects", objects)
}
