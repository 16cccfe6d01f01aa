package hunt

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// Options are a hunt as the command line gives it, plain data: NewPlan makes its Plan,
// so that the command only parses its flags. Zero values are the defaults, but for
// Port and GIDIndex, which are as the command line has them.
type Options struct {
	// Profile is the NIC's profile: its grid is the space, its hunt section the rules,
	// its point duration and warm-up the runs'. VendorPartID is the device's, for the
	// profile's link rate (Plan.LinkGbps).
	Profile      profiles.Profile
	VendorPartID uint32
	// Ops are the operations searched (none: the profile's default).
	Ops []string
	// Space overrides dimensions of the profile's space (Space.Override's syntax;
	// --space), after the fan-out across Servers.
	Space string
	// Servers are the servers as given where there are several (SERVER... or a,b,c),
	// the first the session's; Server the one where there is one. A fan-out of k runs
	// against the first k (Space.WithPeers).
	Servers []string
	Server  string
	// Device, Port and GIDIndex are this side's -d, -i and -x, for the findings'
	// command lines where they are not the defaults ("", 1, -1).
	Device   string
	Port     int
	GIDIndex int
	Budget   time.Duration
	MaxRuns  int
	Seed     uint64
	// PointDurationS is a run's duration (0: the profile's); Counters the counters read
	// ("": auto).
	PointDurationS float64
	Counters       string
	// Validate and Prior are Plan's.
	Validate func(result.Config) error
	Prior    []Record
}

// SpaceFor is the hunt's space: the profile's (DefaultSpace of o.Ops), its fan-out
// across the servers given (WithPeers), then o.Space. A peers value beyond the servers
// given is an error, as a syntax error is; the command line says them of --space.
func (o Options) SpaceFor() (Space, error) {
	n := max(len(o.Servers), 1)
	s := DefaultSpace(o.Profile, o.Ops...).WithPeers(n)
	if o.Space == "" {
		return s, nil
	}
	s, err := s.Override(o.Space)
	if err != nil {
		return s, err
	}
	if d, ok := s.Dim(DimPeers); ok {
		if k, _ := strconv.Atoi(d.Values[len(d.Values)-1]); k > n {
			return s, fmt.Errorf("peers %d: %d server%s given (a fan-out of k runs against the first k SERVERs)", k, n, map[bool]string{true: "", false: "s"}[n == 1])
		}
	}
	return s, nil
}

// NewPlan is the Plan of the hunt o describes: its space (SpaceFor; its error is the
// only one), the runs' common settings from the profile (duration, warm-up) and o
// (counters), the profile's rules and link rate, and the server as the findings'
// command lines name it (CommandServer).
func NewPlan(o Options) (Plan, error) {
	if o.Counters == "" {
		o.Counters = "auto"
	}
	space, err := o.SpaceFor()
	if err != nil {
		return Plan{}, err
	}
	return Plan{
		Space: space,
		Base: result.Config{Test: result.BW, DurationS: o.Duration(), WarmupIterations: uint64(o.Profile.WarmupIterations),
			Counters: o.Counters, InlineBytes: plan.InlineAuto},
		Budget: o.Budget, MaxRuns: o.MaxRuns, Seed: o.Seed, Rules: RulesFor(o.Profile),
		LinkGbps: o.Profile.LinkGbpsFor(o.VendorPartID),
		Validate: o.Validate,
		Prior:    o.Prior, Server: o.CommandServer(),
	}, nil
}

// Duration is a run's duration in seconds: o.PointDurationS, or the profile's.
func (o Options) Duration() float64 {
	if o.PointDurationS == 0 {
		return o.Profile.PointDurationS
	}
	return o.PointDurationS
}

// CommandServer is the server as the findings' command lines give it (rdmabench's and
// perftest's alike): its address (the servers, comma-separated, where there are
// several: a fan-out's command line names the first k) and, where they are not the
// defaults, this side's device, port and GID index. The control port is rdmabench's own
// (perftest's -p is another): the command line says so once where it is not the default.
func (o Options) CommandServer() string {
	var b strings.Builder
	if o.Device != "" {
		fmt.Fprintf(&b, "-d %s ", o.Device)
	}
	if o.Port != 1 {
		fmt.Fprintf(&b, "-i %d ", o.Port)
	}
	if o.GIDIndex >= 0 {
		fmt.Fprintf(&b, "-x %d ", o.GIDIndex)
	}
	if len(o.Servers) > 1 {
		b.WriteString(strings.Join(o.Servers, ","))
	} else {
		b.WriteString(o.Server)
	}
	return b.String()
}
