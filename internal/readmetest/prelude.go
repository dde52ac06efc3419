package readmetest

// module is the import path of this repository's module, which the snippets
// import.
const module = "github.com/queuety/queuety-go"

// KnownImports maps the package names a fragment may use without an import
// block to their import paths. A fragment that uses pkg.Name with pkg in this
// table gets the import; a fragment that uses any other package must carry
// its own import block.
var KnownImports = map[string]string{
	// This module.
	"builder":     module + "/builder",
	"cli":         module + "/cli",
	"deadline":    module + "/deadline",
	"machine":     module + "/machine",
	"driver":      module + "/store/driver",
	"observe":     module + "/observe",
	"otelqueuety": module + "/metrics/otelqueuety",
	"prom":        module + "/metrics/prom",
	"queuety":     module + "/queuety",
	"queuetytype": module + "/queuetytype",
	"webhook":     module + "/webhook",
	"worker":      module + "/worker",

	// The test kit.
	"queuetytest": module + "/queuetytest",

	"middleware": module + "/middleware",

	// The standard library.
	"context": "context",
	"errors":  "errors",
	"fmt":     "fmt",
	"http":    "net/http",
	"io":      "io",
	"json":    "encoding/json",
	"log":     "log",
	"os":      "os",
	"signal":  "os/signal",
	"slog":    "log/slog",
	"sql":     "database/sql",
	"strings": "strings",
	"sync":    "sync",
	"syscall": "syscall",
	"testing": "testing",
	"time":    "time",
}

// Var is a package-level variable a fragment may use without declaring it.
type Var struct {
	// Type is the variable's type as Go source, using package names of
	// KnownImports.
	Type string
	// Imports are the package names (keys of KnownImports) Type uses.
	Imports []string
}

// Predeclared are the names fragments use without declaring them. The
// first group is what the guides' prose establishes: a context, the client
// of the first workflow example (q, from queuety.Open; docs/workflows.md),
// its worker (w, from worker.New) and an error. The second group stands in for application code the
// snippets call but do not show (the user's own step functions and data);
// their types are what the API needs from them, so a snippet passing them
// to the wrong handler kind still fails. A fragment that declares one of
// these names itself uses its own declaration.
var Predeclared = map[string]Var{
	"ctx": {Type: "context.Context", Imports: []string{"context"}},
	"q":   {Type: "*queuety.Client", Imports: []string{"queuety"}},
	"w":   {Type: "*worker.Worker", Imports: []string{"worker"}},
	"err": {Type: "error"},

	// Application code and data: the quick start's import source and the
	// function that reads it, the step, deadline and for-each handlers the
	// snippets register, and the child workflows of examples/site-index.
	"url":       {Type: "string"},
	"fetch":     {Type: "func(ctx context.Context, source string) ([]any, error)", Imports: []string{"context"}},
	"transform": {Type: "queuety.StepFunc", Imports: []string{"queuety"}},
	"load":      {Type: "queuety.StepFunc", Imports: []string{"queuety"}},
	"fetchData": {Type: "queuety.StepFunc", Imports: []string{"queuety"}},
	"alertOps":  {Type: "func(ctx context.Context, public queuety.State) error", Imports: []string{"context", "queuety"}},
	"indexPage": {Type: "func(ctx context.Context, page any) (queuety.State, error)", Imports: []string{"context", "queuety"}},
	"publish":   {Type: "*builder.Builder", Imports: []string{"builder"}},
	"notify":    {Type: "*builder.Builder", Imports: []string{"builder"}},
	// The artifacts snippet: a step's draft text and the workflow it reads.
	"body":       {Type: "string"},
	"workflowID": {Type: "int64"},
	// The handler-defaults snippet: the job handler, the DSN, a payload and
	// the hook's alert.
	"sendInvoice": {Type: "queuety.JobFunc", Imports: []string{"queuety"}},
	"dsn":         {Type: "string"},
	"payload":     {Type: "map[string]any"},
	"pageOnCall":  {Type: "func(ctx context.Context, jobID int64, err error)", Imports: []string{"context"}},
}
