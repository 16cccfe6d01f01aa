// Package plan holds the rules of a test plan, rdmabench's configuration of one test:
// perftest's defaults (Defaults), what a plan may ask (Validate), the limits, perftest's
// tables (the inline size and post API it picks per device), the --mr modes and the QP
// timeout's default. It is pure Go and knows no verbs, no engine and no program: the
// server reading a client's plan, the client checking its flags, the sweep and the hunt
// all call these same functions. Measurer, the seam through which the sweep and the
// hunt run a plan, is declared here too.
package plan

import "github.com/rdmabench/rdmabench/result"

// Config is a test plan. Its type is result.Config, declared with the result schema
// whose "config" object it is (result/schema.json), so that results keep their keys;
// plan names it for the rules that read and fill it.
type Config = result.Config

// Op is what the plan's rules know of an RDMA operation: facts, not code. The engine's
// side of an operation (its sessions and loops) is bench.Op, which embeds one of these.
type Op struct {
	Name string // "write", "read"
	// Payload: the op's requests carry its data, so small messages can go inline
	// (--inline; WRITE). A READ request carries none.
	Payload bool
	// Landings: where a run against several servers lands their data at the client,
	// the default first (READ: per-peer, shared); nil when the data goes to the
	// servers (WRITE sends one source region to every server).
	Landings []string
	// What perftest does for this op when a flag is left unset: BWIterations is its
	// bandwidth tests' --iters; LatInline, whether its latency test goes inline on the
	// devices it knows (DefaultInline).
	BWIterations uint64
	LatInline    bool
	// LatOrdered: this op's latency test polls the last byte of each message that
	// arrives, so its memory must see the bytes land in order: no PCIe relaxed ordering
	// (WRITE's ping-pong; perftest's ib_write_lat leaves it off too).
	LatOrdered bool
}

// The operations rdmabench measures.
var (
	Write = Op{
		Name:    "write",
		Payload: true,
		// ib_write_bw's DEF_ITERS_WB; ib_write_lat inlines (DEF_INLINE_WRITE).
		BWIterations: 5000,
		LatInline:    true,
		// The ping-pong spins on the last byte of each message.
		LatOrdered: true,
	}
	Read = Op{
		Name: "read",
		// A fan-in lands each server's data in a region of its own unless told to share.
		Landings: []string{"per-peer", "shared"},
		// ib_read_bw's DEF_ITERS; a READ request carries no payload to inline.
		BWIterations: 1000,
	}
)

// Ops is every operation by name. It is read-only.
var Ops = map[string]Op{Write.Name: Write, Read.Name: Read}

// Defaults fills what a plan leaves unset the way its operation does (Op.Defaults). A
// plan for an unknown operation stays as it is, for Validate to refuse.
func Defaults(c *Config) {
	if op, ok := Ops[c.Op]; ok {
		op.Defaults(c)
	}
}

// Validate says what is wrong with a plan, by its operation's rules (Op.Validate).
func Validate(c Config) error {
	op, ok := Ops[c.Op]
	if !ok {
		return unknownOp(c.Op)
	}
	return op.Validate(c)
}

// Defaults fills what the user left unset, the way perftest would (perftest's
// perftest_parameters.h defaults, 4.5 and later, and the adjustments of force_dependecies() in
// perftest_parameters.c):
//
//   - size 64 KiB for bw, 2 B for lat;
//   - iterations 5000 for WRITE bw (DEF_ITERS_WB), 1000 otherwise (DEF_ITERS);
//   - tx depth 128 for bw (DEF_TX_BW), 1 for lat (DEF_TX_LAT);
//   - post list 1, one QP;
//   - CQ moderation, when not given: the post list when that is longer than 1 ("Post
//     List requested - CQ moderation will be the size of the post list"); else 1 for
//     bandwidth messages over 8 KiB without completion events (perftest disables
//     moderation above MSG_SIZE_CQ_MOD_LIMIT, 8192 B, unless -e); else 100
//     (DEF_CQ_MOD); never more than the tx depth.
//
// PCIe relaxed ordering is on unless --disable-pcie-relaxed, as perftest (since 2020)
// registers every MR, except for a latency test whose op polls the last byte
// (LatOrdered: WRITE), as ib_write_lat. --sl and --tclass are 0, as perftest's.
//
// --inline defaults to InlineAuto, resolved per device by ResolveInline. --mr, which
// perftest lacks: per-io signals every WR (cq-mod 1 when not given), cache holds 16
// registrations (--mr-cache), and pool, the default, is recorded as no --mr at all.
func (op Op) Defaults(c *Config) {
	c.Op = op.Name
	if c.Threads == 1 {
		c.Threads = 0 // one thread, as without --threads: the plan says so once
	}
	if c.Test == "" {
		c.Test = result.BW
	}
	if c.MsgSizeBytes == 0 {
		c.MsgSizeBytes = 65536
		if c.Test == result.Lat {
			c.MsgSizeBytes = 2
		}
	}
	if c.Iterations == 0 {
		c.Iterations = 1000
		if c.Test == result.BW && op.BWIterations > 0 {
			c.Iterations = op.BWIterations
		}
	}
	if c.SQDepth == 0 {
		c.SQDepth = 128
		if c.Test == result.Lat {
			c.SQDepth = 1
		}
	}
	if c.PostList == 0 {
		c.PostList = 1
	}
	c.QPTimeout = ConfigQPTimeout(c.QPTimeout) // the default, said one way (one configuration key)
	if c.CQMod == 0 {
		c.CQMod = defaultCQMod(*c)
	}
	if c.NumQPs == 0 {
		c.NumQPs = 1
	}
	c.PCIeRelaxedOrdering = !c.DisablePCIeRelaxed && !(c.Test == result.Lat && op.LatOrdered)
	if c.MR == MRPool { // the default: results of the same plan read the same
		c.MR = ""
	}
	if c.MR == MRCache && c.MRCache == 0 {
		c.MRCache = max(DefaultMRCache, c.SQDepth) // room for every WR in flight
	}
	if c.Peers > 0 { // several servers (Fan)
		if c.Sync == "" {
			c.Sync = "stream"
		}
		if c.Landing == "" && len(op.Landings) > 0 {
			c.Landing = op.Landings[0]
		}
	}
}

// defaultCQMod is the CQ moderation of a plan that gives none (see Defaults).
func defaultCQMod(c Config) int {
	var q int
	switch {
	case c.Sync == "rounds": // every WR of a round is signalled
		q = 1
	case c.MR == MRPerIO: // each WR's MR goes at its completion
		q = 1
	case c.Test == result.BW && c.PostList > 1:
		q = c.PostList
	case c.Test == result.BW && c.MsgSizeBytes > cqModSizeLimit && !c.CompletionEvents:
		q = 1
	default:
		q = 100
	}
	return min(q, c.SQDepth)
}

// cqModSizeLimit is perftest's MSG_SIZE_CQ_MOD_LIMIT: above it, a bandwidth test
// without -Q signals every WR.
const cqModSizeLimit = 8192

// DefaultWarmup is the warm-up used when the user gives none: a tenth of the run.
func DefaultWarmup(c Config) uint64 {
	if c.DurationS > 0 {
		return min(uint64(max(16, 2*c.SQDepth)), MaxWarmup)
	}
	return min(max(16, c.Iterations/10), MaxWarmup)
}

// DefaultQPTimeout is the QPs' local ACK timeout exponent perftest and rdmabench use
// unless told (-u): 4.096 us x 2^14, 67 ms. A plan says it as 0 (ConfigQPTimeout).
const DefaultQPTimeout = 14

// QPTimeout is the exponent a QP gets for a plan's (or a spec's) QP timeout u: u
// itself, or DefaultQPTimeout for 0, the plan's word for the default.
func QPTimeout(u int) int {
	if u == 0 {
		return DefaultQPTimeout
	}
	return u
}

// ConfigQPTimeout is QPTimeout's inverse: the QP timeout exponent u as a plan says it,
// 0 for DefaultQPTimeout, so that plans of the same test read the same.
func ConfigQPTimeout(u int) int {
	if u == DefaultQPTimeout {
		return 0
	}
	return u
}

// Inline says whether a plan's messages go inline. Only an op with a payload has an
// inline size above 0 (Validate sees to it).
func Inline(c Config) bool { return c.MsgSizeBytes <= c.InlineBytes }
