package queuety

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
)

// templates is a client's workflow template registry: template name to
// its runtime definition bundle, as JSON. Like Queuety's WorkflowRegistry
// it lives in the process, not in the database.
type templates struct {
	mu     sync.RWMutex
	byName map[string][]byte
}

// RunOption tunes one RunWorkflow dispatch.
type RunOption func(*runConfig)

type runConfig struct{ idempotencyKey string }

// IdempotencyKey makes a RunWorkflow dispatch idempotent, as
// WorkflowDefinition.IdempotencyKey does for DispatchWorkflow (Queuety's
// run_workflow option idempotency_key; at most 191 bytes).
func IdempotencyKey(key string) RunOption {
	return func(r *runConfig) { r.idempotencyKey = key }
}

// RegisterWorkflowTemplate registers def as the workflow template named
// def.Name, replacing any template of that name (Queuety's
// register_workflow_template). The registry belongs to this Client and
// its process, as Queuety's belongs to the PHP process: register templates
// at start-up, in every process that runs them by name.
//
// The template is kept as Queuety's runtime definition bundle
// (build_runtime_definition), which WorkflowTemplateJSON returns, so
// RunWorkflow writes the rows Queuety's run_workflow writes. def must not
// set IdempotencyKey: give it per dispatch with the IdempotencyKey option.
func (c *Client) RegisterWorkflowTemplate(def WorkflowDefinition) error {
	def, err := def.normalized()
	if err != nil {
		return fmt.Errorf("queuety: register workflow template: %w", err)
	}
	if def.IdempotencyKey != "" {
		return fmt.Errorf("queuety: register workflow template %q: %w", def.Name,
			invalidf("a template takes its idempotency key per dispatch (RunWorkflow with IdempotencyKey)"))
	}
	raw, err := phpjson.Marshal(def.engineDefinition().Encode())
	if err != nil {
		return fmt.Errorf("queuety: register workflow template %q: %w", def.Name, err)
	}
	_, err = c.RegisterWorkflowTemplateJSON(raw)
	return err
}

// RegisterWorkflowTemplateJSON registers a workflow template from its
// runtime definition bundle: the JSON object Queuety PHP's
// WorkflowBuilder::build_runtime_definition() returns (a template's
// definition, which the PHP bridge's QueuetyGo\WorkflowTemplates::export
// writes) or WorkflowTemplateJSON returned. The template is named by the
// bundle's "name", which it returns. The bundle is checked as a dispatch
// would check it.
func (c *Client) RegisterWorkflowTemplateJSON(bundle []byte) (string, error) {
	def, err := dispatch.TemplateDefinition(bundle)
	if err != nil {
		return "", fmt.Errorf("queuety: register workflow template: %w", err)
	}
	raw := slices.Clone(bundle)
	c.templates.mu.Lock()
	defer c.templates.mu.Unlock()
	if c.templates.byName == nil {
		c.templates.byName = map[string][]byte{}
	}
	c.templates.byName[def.Name] = raw
	return def.Name, nil
}

// LoadWorkflowTemplates registers the template bundles (see
// RegisterWorkflowTemplateJSON) in path: one JSON file, or every *.json
// file directly in a directory, in name order. It returns how many it
// registered; the first bad file stops it, with the file named in the
// error.
func (c *Client) LoadWorkflowTemplates(path string) (int, error) {
	files := []string{path}
	if st, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("queuety: load workflow templates: %w", err)
	} else if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return 0, fmt.Errorf("queuety: load workflow templates: %w", err)
		}
		files = files[:0]
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	for i, f := range files {
		raw, err := os.ReadFile(f)
		if err == nil {
			_, err = c.RegisterWorkflowTemplateJSON(raw)
		}
		if err != nil {
			return i, fmt.Errorf("queuety: load workflow templates from %s: %w", f, err)
		}
	}
	return len(files), nil
}

// WorkflowTemplates returns the names of the registered templates, sorted.
func (c *Client) WorkflowTemplates() []string {
	c.templates.mu.RLock()
	defer c.templates.mu.RUnlock()
	names := make([]string, 0, len(c.templates.byName))
	for n := range c.templates.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// WorkflowTemplateJSON returns the runtime definition bundle of the
// template registered as name (Queuety's WorkflowTemplate::$definition),
// for PHP's QueuetyGo\WorkflowTemplates::load or another process's
// LoadWorkflowTemplates. It returns queuetytype.ErrNotFound for an unknown name.
func (c *Client) WorkflowTemplateJSON(name string) ([]byte, error) {
	c.templates.mu.RLock()
	raw, ok := c.templates.byName[name]
	c.templates.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("queuety: workflow template %q is not registered: %w", name, queuetytype.ErrNotFound)
	}
	return slices.Clone(raw), nil
}

// RunWorkflow starts a workflow from the template registered as name,
// with state as its initial state (a State, map or struct encoding as a
// JSON object; nil for none), and returns its id (Queuety's
// run_workflow). It writes the rows Queuety's dispatch_workflow_definition
// writes for the same bundle, in one transaction. An unknown name returns
// an error wrapping queuetytype.ErrNotFound (Queuety throws "Workflow
// template '<name>' is not registered.").
func (c *Client) RunWorkflow(ctx context.Context, name string, state any, opts ...RunOption) (int64, error) {
	var rc runConfig
	for _, o := range opts {
		if o != nil {
			o(&rc)
		}
	}
	raw, err := c.WorkflowTemplateJSON(name)
	if err != nil {
		return 0, err
	}
	def, err := dispatch.TemplateDefinition(raw)
	if err != nil {
		return 0, fmt.Errorf("queuety: run workflow %q: %w", name, err)
	}
	if len(rc.idempotencyKey) > 191 {
		return 0, fmt.Errorf("queuety: run workflow %q: %w", name, invalidf("idempotency key is longer than 191 characters"))
	}
	def.IdempotencyKey = strings.TrimSpace(rc.idempotencyKey)
	initial, err := workflowstate.ToObject("initial state", state)
	if err != nil {
		return 0, fmt.Errorf("queuety: run workflow %q: %w", name, err)
	}
	return c.engine.Dispatcher().DispatchWorkflow(ctx, def, initial)
}
