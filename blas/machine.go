package blas

import (
	"sync"
	"time"
)

// machine is what this process has measured of the machine it runs on: the
// package's only state. It is package-level, not held by a value the
// caller passes around, for two reasons:
//   - A measurement of the machine is the same for the whole process, as
//     golang.org/x/sys/cpu's features are, and repeating it costs: Choose
//     loads the system library and times products, which the kNN monitor
//     and the linear probe would otherwise redo at every evaluation.
//   - Every backend of a process must compute with the same SGEMM: a run,
//     its in-process evaluations and a resumption in the same process
//     agree bit for bit only if a second race near a tie cannot choose the
//     other kernel.
//
// Each table has its own lock, since a race (under raceMu) may run while a
// Choose (under choiceMu) waits for it.
var machine = struct {
	choiceMu sync.Mutex
	choices  map[chooseKey]Choice // Choose's result
	raceMu   sync.Mutex
	races    map[string]raceTimes // chooseFaster's race, by pair of implementations' names
	shapeMu  sync.Mutex
	shapes   map[string]*shapeTable // PerShape's choices, by pair of implementations' names
}{
	choices: map[chooseKey]Choice{},
	races:   map[string]raceTimes{},
	shapes:  map[string]*shapeTable{},
}

// chooseKey is what Choose's result depends on beside the machine: the
// thread count and the library override ($SIMCLR_BLAS).
type chooseKey struct {
	threads int
	library string
}

// raceTimes are a race's totals on the library and on the built-in kernel.
type raceTimes struct{ lib, ours time.Duration }
