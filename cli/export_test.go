package cli

// HintCommand exposes hintCommand to the tests.
var HintCommand = hintCommand

// RedactDSN exposes redactDSN to the tests.
var RedactDSN = redactDSN

// SetDemoStart makes the demo believe it was started as programPath in
// the directory wd, until the returned function restores the truth. Only
// tests that do not run in parallel may call it.
func SetDemoStart(programPath, wd string) (restore func()) {
	oldPath, oldWd := demoProgramPath, demoWorkDir
	demoProgramPath = func() string { return programPath }
	demoWorkDir = func() (string, error) { return wd, nil }
	return func() { demoProgramPath, demoWorkDir = oldPath, oldWd }
}
