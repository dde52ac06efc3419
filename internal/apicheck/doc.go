// Package apicheck holds the tests that keep the user-facing API clean: no
// exported identifier of the user-facing packages names a type from
// store/driver or an internal package, and the queuety package stays short
// enough to read in one go doc listing.
package apicheck
