package store

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PageSize is how many keys one read of a whole zone asks for: a zone of a million keys is
// never one response, in etcd's memory, on the wire or in ours.
const PageSize = 5000

// Get makes one read request; the caller bounds its time and retries it as it sees fit.
type Get func(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)

// ReadPages reads every key under prefix at one revision, PageSize keys per request, and hands
// each response to page. rev 0 reads at the revision of the first page; it returns the
// revision read. A compaction of that revision between two pages fails the read with
// rpctypes.ErrCompacted: what was read so far is not a snapshot of anything.
func ReadPages(ctx context.Context, get Get, prefix string, rev int64, page func(*clientv3.GetResponse), opts ...clientv3.OpOption) (int64, error) {
	return readPages(ctx, get, prefix, "", rev, PageSize, page, opts...)
}

// ReadOn is ReadPages of the keys under prefix after the key after, at revision rev (not 0):
// the rest of a read of prefix whose response was cut short at after by its limit (More).
func ReadOn(ctx context.Context, get Get, prefix, after string, rev int64, page func(*clientv3.GetResponse), opts ...clientv3.OpOption) error {
	if rev == 0 {
		return fmt.Errorf("reading on %s after %s: no revision", prefix, after)
	}
	_, err := readPages(ctx, get, prefix, after, rev, PageSize, page, opts...)
	return err
}

// readPages reads the keys under prefix after the key after ("": from the first) in pages of
// limit keys.
func readPages(ctx context.Context, get Get, prefix, after string, rev, limit int64, page func(*clientv3.GetResponse), extra ...clientv3.OpOption) (int64, error) {
	from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	if after != "" {
		from = after + "\x00"
	}
	for {
		opts := append([]clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(limit)}, extra...)
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := get(ctx, from, opts...)
		if err != nil {
			return 0, fmt.Errorf("reading %s at revision %d: %w", prefix, rev, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		page(resp)
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
