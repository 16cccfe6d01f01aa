package rdma

import (
	"errors"

	"github.com/rdmabench/rdmabench/counters"
)

// Counters: the loopback fabric has no NIC, so no counters.
func (loopEngine) Counters() (counters.Snapshot, error) {
	return counters.Snapshot{}, errors.New("the loopback fabric has no NIC counters")
}
