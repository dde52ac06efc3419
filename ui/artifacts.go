package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/store/driver"
)

// Bounds of the artifact views.
const (
	// workflowArtifacts caps the artifacts a workflow's page lists.
	workflowArtifacts = 100
	// artifactBytes caps the content an artifact's view reads and serves;
	// a larger content is refused with 413 and its size.
	artifactBytes = 1 << 20
)

// artifactRow is one artifact on a workflow's page.
type artifactRow struct {
	ID        int64
	Key, Kind string
	Step      *int
	Size      int64 // the content's length in bytes
	Created   string
	Updated   string
	Href      string
}

// artifactList is the artifacts of a workflow's page.
type artifactList struct {
	WorkflowID int64
	Rows       []artifactRow
	Total      int64
}

// workflowArtifacts lists up to workflowArtifacts artifacts of a
// workflow by key, without content or metadata, with their sizes.
func (s *server) workflowArtifacts(ctx context.Context, wfID int64) (*artifactList, error) {
	out := &artifactList{WorkflowID: wfID}
	err := clientseam.StoreOf(s.c).InTx(ctx, func(tx driver.Tx) error {
		out.Rows = out.Rows[:0]
		n, err := tx.ArtifactCount(ctx, wfID)
		if err != nil || n == 0 {
			out.Total = n
			return err
		}
		out.Total = n
		list, err := tx.ArtifactPage(ctx, driver.ArtifactQuery{WorkflowID: wfID, Limit: workflowArtifacts, MaxValueBytes: -1})
		if err != nil {
			return err
		}
		for _, a := range list {
			out.Rows = append(out.Rows, artifactRow{ID: a.ID, Key: a.Key, Kind: a.Kind, Step: a.StepIndex, Size: a.OmittedContentBytes + int64(len(a.Content)),
				Created: formatTime(a.CreatedAt), Updated: formatTime(a.UpdatedAt),
				Href: fmt.Sprintf("%s/workflows/%d/artifacts/%d", s.opts.BasePath, wfID, a.ID)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list artifacts of workflow %d: %w", wfID, err)
	}
	return out, nil
}

// artifactContent serves an artifact's stored content as text/plain, at
// most artifactBytes of it: inline, or as an attachment with ?download=1.
// It is never served as HTML, so a content that holds markup is shown as
// text.
func (s *server) artifactContent(w http.ResponseWriter, r *http.Request) {
	wfID, ok := s.pathID(w, r, "workflow")
	if !ok {
		return
	}
	raw := r.PathValue("artifact")
	var id int64
	if _, err := fmt.Sscan(raw, &id); err != nil || id <= 0 || fmt.Sprint(id) != raw {
		s.fail(w, r, http.StatusBadRequest, "%q is not an artifact id: ids are positive whole numbers.", raw)
		return
	}
	var a *driver.Artifact
	err := clientseam.StoreOf(s.c).InTx(r.Context(), func(tx driver.Tx) error {
		list, err := tx.ArtifactPage(r.Context(), driver.ArtifactQuery{WorkflowID: wfID, IDs: []int64{id}, Limit: 1, MaxValueBytes: artifactBytes})
		if err != nil {
			return err
		}
		a = nil
		if len(list) == 1 {
			a = list[0]
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if a == nil {
		s.fail(w, r, http.StatusNotFound, "Not found: workflow %d has no artifact %d.", wfID, id)
		return
	}
	if a.OmittedContentBytes > 0 {
		s.fail(w, r, http.StatusRequestEntityTooLarge, "Artifact %q has %d bytes, more than this view serves (%d): read it with queuety-worker workflow artifact %d KEY.",
			a.Key, a.OmittedContentBytes, artifactBytes, wfID)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	disposition := "inline"
	if r.URL.Query().Get("download") == "1" {
		disposition = "attachment"
	}
	h.Set("Content-Disposition", fmt.Sprintf(`%s; filename="%s"`, disposition, artifactFilename(wfID, a.Key, a.Kind)))
	_, _ = w.Write(a.Content)
}

// artifactFilename is a download's file name: the workflow id and the
// key with every character but letters, digits, '.', '-' and '_'
// replaced, and an extension by kind.
func artifactFilename(wfID int64, key, kind string) string {
	var b strings.Builder
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == '.' && b.Len() > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 80 {
			break
		}
	}
	ext := ".txt"
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "json":
		ext = ".json"
	case "markdown", "md":
		ext = ".md"
	}
	return fmt.Sprintf("workflow-%d-%s%s", wfID, b.String(), ext)
}
