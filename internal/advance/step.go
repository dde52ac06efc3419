package advance

import (
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/store/driver"
)

// Step is the workflow side of a claimed job that runs a workflow step: the
// workflow row as the claim read it, its decoded state, its step
// definitions and the definition of the step the job runs. The zero Step
// belongs to a plain job.
type Step struct {
	// Workflow is the workflow row, read in the claim's transaction.
	Workflow *driver.Workflow
	// State is the workflow's decoded state, private keys included.
	State *phpjson.Object
	// Steps are the workflow's step definitions, decoded from _steps.
	Steps []*workflowdef.Step
	// Def is the definition of the step the job runs.
	Def *workflowdef.Step
}
