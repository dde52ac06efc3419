// Package chaos holds the chaos suite: worker processes against a private
// MariaDB server, SIGKILLed at random, a database killed and restarted
// under them, concurrent deadline sweepers, and a worker stopped while a
// handler ignores its context. The tests are behind the chaos build tag:
//
//	go test -tags chaos ./chaos/ -run TestChaos -v
//
// See README.md in this directory for the scales and the report's columns.
package chaos
