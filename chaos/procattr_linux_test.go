//go:build chaos

package chaos

// supported is true: the suite signals process groups and relies on the
// kernel killing children with their parent, which Linux does.
const supported = true
