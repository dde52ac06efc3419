// Package fleetrate holds the test of a rate limit shared by a fleet of
// worker processes on MySQL: the test binary starts copies of itself as
// worker processes, all on one handler limited to 10 starts per second,
// and checks the starts they recorded. It has no code of its own.
package fleetrate
