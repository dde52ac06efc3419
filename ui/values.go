package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/queuety/queuety-go/queuetytype"
)

// Bounds on the large values (payloads, heartbeat data, workflow state)
// a page shows.
const (
	// previewChars is how much of a large value a page shows, in
	// characters; a longer value is cut there, with a link to the whole.
	previewChars = 64 << 10
	// rawPieceChars is how many characters of a large value the raw
	// endpoints read from the store at a time: a value of any size is
	// streamed with one piece in memory.
	rawPieceChars = 256 << 10
)

// valueView is a large value as a page shows it: whole and indented when
// it is short, its first previewChars characters otherwise, with a link
// to the raw value.
type valueView struct {
	Text  string
	Cut   bool  // Text is the beginning of the value
	Shown int   // characters shown (when Cut)
	Len   int64 // the value's length in characters (when Cut)
	Raw   string
}

// newValueView shows a value the store cut to previewChars characters
// (total is its full length), with raw as the URL of the whole.
func newValueView(b []byte, total int64, raw string) *valueView {
	if b == nil && total <= 0 {
		return nil
	}
	if total <= int64(previewChars) {
		return &valueView{Text: prettyJSON(b), Raw: raw}
	}
	text := strings.ToValidUTF8(string(b), "")
	return &valueView{Text: text, Cut: true, Shown: utf8.RuneCountInString(text), Len: total, Raw: raw}
}

// newJSONView shows a decoded value (a workflow's state) as indented JSON,
// cut to previewChars characters.
func newJSONView(v any, raw string) *valueView {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return &valueView{Text: fmt.Sprintf("(cannot show the value: %v)", err), Raw: raw}
	}
	n := utf8.RuneCount(b)
	if n <= previewChars {
		return &valueView{Text: string(b), Raw: raw}
	}
	return &valueView{Text: string(firstChars(b, previewChars)), Cut: true, Shown: previewChars, Len: int64(n), Raw: raw}
}

// firstChars returns the first n characters of UTF-8 text (all of it
// when it is shorter).
func firstChars(b []byte, n int) []byte {
	i := 0
	for ; i < len(b) && n > 0; n-- {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return b[:i]
}

// rawValue serves the whole of a large column as text, read from the
// store in pieces of rawPieceChars characters and written as it is read,
// so no request holds more than one piece. A value that changes length
// while it streams (a workflow's state, heartbeat data) ends the response
// early: the client sees a failed download, not a mix of two versions.
func (s *server) rawValue(col queuetytype.TextColumn, what, name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := s.pathID(w, r, what)
		if !ok {
			return
		}
		ctx := r.Context()
		piece, total, err := s.c.ReadText(ctx, col, id, 0, rawPieceChars)
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		if total < 0 {
			s.fail(w, r, http.StatusNotFound, "The %s %d has no %s.", what, id, name)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Disposition", fmt.Sprintf(`inline; filename="%s-%d-%s.json"`, what, id, strings.ReplaceAll(name, " ", "-")))
		rc := http.NewResponseController(w)
		for from := int64(0); ; {
			if _, err := w.Write(piece); err != nil {
				return // the client went away
			}
			_ = rc.Flush()
			if from += rawPieceChars; from >= total {
				return
			}
			var now int64
			piece, now, err = s.c.ReadText(ctx, col, id, from, rawPieceChars)
			if err == nil && now != total {
				err = fmt.Errorf("the value changed while it was read (%d characters, then %d)", total, now)
			}
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("ui: raw value cut short", "what", what, "id", id, "value", name, "at", from, "err", err)
				}
				panic(http.ErrAbortHandler)
			}
		}
	}
}
