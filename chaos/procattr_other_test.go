//go:build chaos && !linux

package chaos

// supported is false: the suite signals process groups and relies on the
// kernel killing children with their parent, which it does on Linux only.
const supported = false
