package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// Lineage tells when the etcd behind a client is no longer the store the client knew: restored
// from a snapshot (the documented disaster recovery) or another cluster behind the same
// endpoints. What a role holds from before (the serve role's index, the writer's idea of what
// it published) then describes another store, and must be read again rather than trusted:
// a watch resumed at the old revision would wait for revisions that the restored store numbers
// anew, and drop every change below them.
//
// It reads the header of every answer the client gets (interceptors on the client's
// connection, see Connect). A new store is:
//   - a new cluster ID;
//   - an answer that is linearizable (a read that is not serializable, a write) at a revision
//     below one that an answer read before it was asked: every revision an answer carries has
//     been committed, and a linearizable answer is at or after everything committed before it
//     was asked, so only a store that lost history answers below;
//   - a member whose raft log went back to less than half of what it was (its status): etcdutl
//     snapshot restore starts every member's log afresh, at the number of members. This finds a
//     restore even after writes have taken the revision past the old one (other writers that
//     reconnected first), where the revision no longer tells;
//   - a member list that shares no member with the last one.
//
// A role that finds a new store on its own (the serve role's read at a revision etcd has not
// reached) acts on it itself; the Lineage is what every role on the client hears.
type Lineage struct {
	log Logger

	mu      sync.Mutex
	cluster uint64            // the cluster ID of the answers; 0 before the first
	rev     int64             // the newest revision an answer carried
	indexes map[uint64]uint64 // member ID -> its raft index at its last status
	members []uint64          // the member IDs of the last member list, sorted
	gen     uint64
	changed chan struct{} // closed at the next new store
}

// NewLineage follows the answers of one client; log says when the store is a new one.
func NewLineage(log Logger) *Lineage {
	return &Lineage{log: log, indexes: map[uint64]uint64{}, changed: make(chan struct{})}
}

// Generation is how many times the store was found new, and a channel closed at the next time.
// A nil Lineage never finds one: 0 and a nil channel.
func (l *Lineage) Generation() (uint64, <-chan struct{}) {
	if l == nil {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen, l.changed
}

// mark is what the Lineage knew when a request was asked: its answer is judged against it.
type mark struct {
	gen uint64
	rev int64
}

func (l *Lineage) mark() mark {
	l.mu.Lock()
	defer l.mu.Unlock()
	return mark{l.gen, l.rev}
}

// heard takes the header of an answer to a request asked at m.
func (l *Lineage) heard(h *pb.ResponseHeader, linearizable bool, m mark) {
	if h == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.gen != m.gen:
		// Asked of the store before the last new one: it says nothing of this one.
		return
	case h.ClusterId != 0 && l.cluster != 0 && h.ClusterId != l.cluster:
		l.newStoreLocked(fmt.Sprintf("its cluster ID changed from %x to %x", l.cluster, h.ClusterId))
	case linearizable && h.Revision < m.rev:
		l.newStoreLocked(fmt.Sprintf("it answered at revision %d, after answering at %d: its history went back (restored from a snapshot?)", h.Revision, m.rev))
	}
	if h.ClusterId != 0 {
		l.cluster = h.ClusterId
	}
	l.rev = max(l.rev, h.Revision)
}

// status takes a member's status: its raft index.
func (l *Lineage) status(s *pb.StatusResponse, m mark) {
	l.heard(s.Header, false, m)
	if s.Header == nil || s.RaftIndex == 0 { // 0: a member just started, before its first raft round
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen != m.gen {
		return
	}
	id := s.Header.MemberId
	if before, ok := l.indexes[id]; ok && s.RaftIndex < before/2 {
		l.newStoreLocked(fmt.Sprintf("member %x's raft log went back from index %d to %d (restored from a snapshot?)", id, before, s.RaftIndex))
	}
	l.indexes[id] = s.RaftIndex
}

// memberList takes the members of a member list.
func (l *Lineage) memberList(r *pb.MemberListResponse, m mark) {
	l.heard(r.Header, false, m)
	ids := make([]uint64, 0, len(r.Members))
	for _, mem := range r.Members {
		ids = append(ids, mem.ID)
	}
	slices.Sort(ids)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen != m.gen || len(ids) == 0 {
		return
	}
	if len(l.members) > 0 && !slices.ContainsFunc(ids, func(id uint64) bool { _, ok := slices.BinarySearch(l.members, id); return ok }) {
		l.newStoreLocked(fmt.Sprintf("none of its members %x is one of the members before, %x", ids, l.members))
	}
	l.members = ids
}

// newStoreLocked starts a new generation: what was known of the old store is forgotten, and
// whoever waits on the last generation's channel is told.
func (l *Lineage) newStoreLocked(why string) {
	l.log.Warningf("etcd is not the store it was: %s; reading everything again", why)
	l.gen++
	l.rev = 0
	l.cluster = 0
	clear(l.indexes)
	l.members = nil
	close(l.changed)
	l.changed = make(chan struct{})
}

// dialOptions feed l with the header of every answer on the connection.
func (l *Lineage) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(l.unary), grpc.WithChainStreamInterceptor(l.stream)}
}

func (l *Lineage) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	m := l.mark()
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil {
		return err
	}
	switch r := reply.(type) {
	case *pb.StatusResponse:
		l.status(r, m)
	case *pb.MemberListResponse:
		l.memberList(r, m)
	case interface{ GetHeader() *pb.ResponseHeader }:
		l.heard(r.GetHeader(), linearizable(req), m)
	}
	return nil
}

// linearizable tells the requests whose answer is at or after every revision committed before
// they were asked: writes, and reads that are not serializable.
func linearizable(req any) bool {
	switch r := req.(type) {
	case *pb.RangeRequest:
		return !r.Serializable
	case *pb.PutRequest, *pb.DeleteRangeRequest:
		return true
	case *pb.TxnRequest:
		// etcd serves a transaction of serializable reads only without a quorum.
		for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
			for _, op := range ops {
				if rr := op.GetRequestRange(); rr == nil || !rr.Serializable {
					return true
				}
			}
		}
	}
	return false
}

func (l *Lineage) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &lineageStream{ClientStream: s, l: l}, nil
}

// lineageStream reads the headers of a stream's answers: a watch's, a lease keep-alive's (never
// linearizable: a member answers them at its own revision), a streamed range's last part.
type lineageStream struct {
	grpc.ClientStream
	l            *Lineage
	linearizable bool
	asked        mark
}

func (s *lineageStream) SendMsg(m any) error {
	if r, ok := m.(*pb.RangeRequest); ok { // RangeStream: one request, then its parts
		s.linearizable, s.asked = !r.Serializable, s.l.mark()
	}
	return s.ClientStream.SendMsg(m)
}

func (s *lineageStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		return err
	}
	switch r := m.(type) {
	case *pb.RangeStreamResponse:
		s.l.heard(r.GetRangeResponse().GetHeader(), s.linearizable, s.asked)
	case interface{ GetHeader() *pb.ResponseHeader }:
		s.l.heard(r.GetHeader(), false, s.l.mark())
	}
	return nil
}
