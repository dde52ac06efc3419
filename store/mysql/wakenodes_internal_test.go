package mysql

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUsableAddresses: the nodes a send reaches on connections of their
// own are the entries of wsrep_incoming_addresses but the server's own
// (wsrep_local_index) and those that name no host and port to connect to.
func TestUsableAddresses(t *testing.T) {
	assert.Equal(t, []string{"10.0.0.1:3306", "10.0.0.3:3307"},
		usableAddresses("10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3307", 1))
	assert.Equal(t, []string{"[fd00::2]:3306", "db3.example:3306"},
		usableAddresses("db1.example:3306, [fd00::2]:3306 ,db3.example:3306", 0), "names, IPv6 and spaces")
	assert.Empty(t, usableAddresses("AUTO,0.0.0.0:3306,[::]:3306,:3306,10.0.0.5,10.0.0.6:0,", 9), "nothing to connect to")
	assert.Empty(t, usableAddresses("", 0), "a server alone")
	assert.Equal(t, []string{"10.0.0.1:3306"}, usableAddresses("10.0.0.1:3306", -1), "an index out of the list leaves none out")
}
