//go:build linux && cgo

package qmodel

/*
#include <stdlib.h>
#include "model.h"
*/
import "C"

import (
	"unsafe"
)

// Violation names, indexed like model.h's QM_V_*.
var violationNames = [...]string{
	"sq overflow", "cq overflow", "bad wr", "sleep unarmed", "sleep with cqes", "get event without event",
	"ack too many", "wrong fd", "runaway", "ping-pong byte", "poll args", "peer queue",
	"mr lkey", "mr invalid at execution", "mr reg", "mr dereg", "mr leak", "wr api",
}

// Fail is rb_fail.
type Fail struct {
	Kind, Status, Opcode int
	WRID                 uint64
	QPNum                uint32
	Err                  int
	Verb                 string
}

// Addr is one WR's local and remote address, as offsets into the local and remote buffer.
type Addr struct{ L, R uint64 }

// Record is what the model saw.
type Record struct {
	Posted, Executed []uint64   // per QP: WRs posted, WRs executed successfully
	MaxSQ            []uint32   // per QP: the most WRs the send queue held
	Leads            []uint64   // per QP: its posts that came first after an ibv_poll_cq call
	Addrs            [][]Addr   // per QP: every successfully executed WR, in order
	RKeys            [][]uint32 // per QP: the rkey each WR of Addrs carried
	Freed            []uint64   // per QP: WRs whose completion the loop polled (each CQE frees its WR and the earlier ones)
	// PostCalls counts ibv_post_send and ibv_wr_complete calls, failed ones too.
	PostCalls uint64
	// PostFailed: the injected post failure (Net.PostFailAt) happened, on QP
	// PostFailQP, to a call with PostFailLen WRs of which PostFailPosted were posted.
	PostFailed                                              bool
	PostFailQP                                              int
	PostFailLen, PostFailPosted                             uint32
	SignalledExecuted, SignalledPolled, CQEsPolled, ErrCQEs uint64
	MaxCQ                                                   uint64
	Polls, Posts, Ticks, Waits, WaitTicks, SleptMS          uint64
	WRBatches                                               uint64 // of Posts: batches posted by ibv_wr_complete
	Arms, EventsRaised, EventsGot, EventsAcked              uint64
	StartNS, FirstPostNS, LastPostNS, LastCQENS, EndNS      int64 // model clock
	// ModelLat is the model's own record of every signalled, successful WR: from its
	// ibv_post_send to the return of the ibv_poll_cq that delivered it, model clock.
	ModelLat ModelLat
	// ModelLatQP is ModelLat per QP.
	ModelLatQP []ModelLat
	// ModelRT is the model's record of each ping-pong round: from the post of the loop's
	// WRITE to the answer's arrival in the loop's buffer.
	ModelRT        ModelLat
	Violations     map[string]uint64
	FirstViolation map[string]string
	// Ping-pong.
	PeerRounds, PeerAnswers, PeerPings       uint64
	MaxPollsBeforePong, PollsBeforePongTotal uint64
	NeedlessPollsBeforePong                  uint64 // polls before a pong with room in the send queue
}

// ModelLat sums the model's record of the post-to-poll time of every signalled WR.
type ModelLat struct {
	N             uint64
	Sum, Min, Max int64
}

func modelTimes(t C.qm_times) ModelLat {
	return ModelLat{N: uint64(t.n), Sum: int64(t.sum), Min: int64(t.min), Max: int64(t.max)}
}

func (md *model) record() Record {
	m := md.m
	nqp := int(m.cfg.nqp)
	qps := unsafe.Slice(m.qps, nqp)
	r := Record{
		Posted: make([]uint64, nqp), Executed: make([]uint64, nqp), MaxSQ: make([]uint32, nqp), Leads: make([]uint64, nqp), Addrs: make([][]Addr, nqp),
		RKeys: make([][]uint32, nqp), Freed: make([]uint64, nqp), PostCalls: uint64(m.post_calls),
		PostFailed: m.post_failed != 0, PostFailQP: int(m.post_fail_qp), PostFailLen: uint32(m.post_fail_len), PostFailPosted: uint32(m.post_fail_posted),
		SignalledExecuted: uint64(m.sig_executed), SignalledPolled: uint64(m.sig_polled),
		CQEsPolled: uint64(m.cqes_polled), ErrCQEs: uint64(m.err_cqes), MaxCQ: uint64(m.max_cq),
		Polls: uint64(m.polls), Posts: uint64(m.posts), WRBatches: uint64(m.wr_batches), Ticks: uint64(m.tick), Waits: uint64(m.waits),
		WaitTicks: uint64(m.wait_ticks), SleptMS: uint64(m.sleeps_ms),
		Arms: uint64(m.arms), EventsRaised: uint64(m.ev_raised), EventsGot: uint64(m.ev_got), EventsAcked: uint64(m.ev_acked),
		StartNS: int64(m.start_clock), FirstPostNS: int64(m.first_post_clock), LastPostNS: int64(m.last_post_clock), LastCQENS: int64(m.last_cqe_clock),
		EndNS:      int64(m.end_clock),
		PeerRounds: uint64(m.pp_round), PeerAnswers: uint64(m.pp_answers), PeerPings: uint64(m.pp_pings),
		MaxPollsBeforePong: uint64(m.max_polls_before_pong), PollsBeforePongTotal: uint64(m.polls_before_pong_total),
		NeedlessPollsBeforePong: uint64(m.needless_polls_before_pong),
		ModelLat:                modelTimes(m.lat),
		ModelRT:                 modelTimes(m.rt),
	}
	for q, p := range qps {
		r.Posted[q] = uint64(p.tail)
		r.Executed[q] = uint64(p.executed)
		r.MaxSQ[q] = uint32(p.max_occ)
		r.Leads[q] = uint64(p.leads)
		r.Freed[q] = uint64(p.head)
		r.ModelLatQP = append(r.ModelLatQP, modelTimes(p.lat))
		if p.naddr > 0 {
			for _, a := range unsafe.Slice(p.addrs, int(p.naddr)) {
				r.Addrs[q] = append(r.Addrs[q], Addr{L: uint64(a.l), R: uint64(a.r)})
				r.RKeys[q] = append(r.RKeys[q], uint32(a.rkey))
			}
		}
	}
	for v, name := range violationNames {
		if n := uint64(m.viol[v]); n > 0 {
			if r.Violations == nil {
				r.Violations = map[string]uint64{}
				r.FirstViolation = map[string]string{}
			}
			r.Violations[name] = n
			r.FirstViolation[name] = C.GoString(&m.viol_msg[v][0])
		}
	}
	return r
}

func goFail(f *C.rb_fail) Fail {
	out := Fail{Kind: int(f.kind), Status: int(f.status), Opcode: int(f.opcode), WRID: uint64(f.wr_id),
		QPNum: uint32(f.qp_num), Err: int(f.err)}
	if f.verb != nil {
		out.Verb = C.GoString(f.verb)
	}
	return out
}
