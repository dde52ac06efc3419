package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// artifactJSON is an artifact's --json view, with Queuety's keys.
type artifactJSON struct {
	ID         int64          `json:"id"`
	WorkflowID int64          `json:"workflow_id"`
	Key        string         `json:"key"`
	Kind       string         `json:"kind"`
	StepIndex  *int           `json:"step_index"`
	Metadata   map[string]any `json:"metadata"`
	CreatedAt  string         `json:"created_at"`
	UpdatedAt  string         `json:"updated_at"`
	// Content is present only when the content was read; it may be null.
	Content *any `json:"content,omitempty"`
}

func artifactView(a *queuetytype.Artifact) artifactJSON {
	v := artifactJSON{ID: a.ID, WorkflowID: a.WorkflowID, Key: a.Key, Kind: a.Kind, StepIndex: a.StepIndex,
		Metadata: a.Metadata, CreatedAt: ts(a.CreatedAt), UpdatedAt: ts(a.UpdatedAt)}
	if a.HasContent {
		c := a.Content
		v.Content = &c
	}
	return v
}

// artifactText is an artifact's content for a table cell or the terminal:
// text kinds as stored, JSON kinds as JSON.
func artifactText(a *queuetytype.Artifact, indent bool) string {
	if s, ok := a.Content.(string); ok && strings.ToLower(a.Kind) != "json" {
		return s
	}
	if indent {
		if b, err := json.MarshalIndent(a.Content, "", "  "); err == nil {
			return string(b)
		}
	}
	return compactJSON(a.Content)
}

func stepCell(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

func workflowArtifactsCommand() *Command {
	return &Command{
		Name:    "artifacts",
		Summary: "list a workflow's artifacts (named outputs stored outside its state)",
		Args:    "ID",
		MinArgs: 1,
		MaxArgs: 1,
		Examples: []string{
			Program + " workflow artifacts 42",
			Program + " workflow artifacts 42 --with-content --json",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			withContent := fs.Bool("with-content", false, "include each artifact's content")
			return onID("workflow", func(e *Env, c *queuety.Client, id int64) error {
				list, err := c.Artifacts(e.Ctx, id, *withContent)
				if err != nil {
					return err
				}
				header := "KEY\tKIND\tSTEP\tUPDATED AT"
				if *withContent {
					header += "\tCONTENT"
				}
				return printList(e, list, artifactView, fmt.Sprintf("No artifacts for workflow #%d.", id), header,
					func(w io.Writer, a *queuetytype.Artifact) {
						fmt.Fprintf(w, "%s\t%s\t%s\t%s", a.Key, a.Kind, stepCell(a.StepIndex), dash(ts(a.UpdatedAt)))
						if *withContent {
							fmt.Fprintf(w, "\t%s", cell(artifactText(a, false), 80))
						}
						fmt.Fprintln(w)
					})
			})
		},
	}
}

func workflowArtifactCommand() *Command {
	return &Command{
		Name:     "artifact",
		Summary:  "show one artifact of a workflow with its content",
		Args:     "ID KEY",
		MinArgs:  2,
		MaxArgs:  2,
		Examples: []string{Program + " workflow artifact 42 draft", Program + " workflow artifact 42 draft --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				return onStore(func(e *Env, c *queuety.Client) error {
					a, err := c.Artifact(e.Ctx, id, args[1])
					if err != nil {
						return err
					}
					if e.Globals.JSON {
						return printJSON(e.Stdout, artifactView(a))
					}
					fmt.Fprintf(e.Stdout, "Artifact %s of workflow %d (%s)\n", a.Key, a.WorkflowID, a.Kind)
					f := newFieldTable(e.Stdout)
					f.add("step", stepCell(a.StepIndex))
					f.add("created at", ts(a.CreatedAt))
					f.add("updated at", ts(a.UpdatedAt))
					if len(a.Metadata) > 0 {
						f.add("metadata", compactJSON(a.Metadata))
					}
					if err := f.Flush(); err != nil {
						return err
					}
					_, err = fmt.Fprintf(e.Stdout, "\n%s\n", artifactText(a, true))
					return err
				})(e, args)
			}
		},
	}
}
