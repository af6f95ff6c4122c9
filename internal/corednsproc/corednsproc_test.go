package corednsproc

import "testing"

func TestLocalizeMovesTheListenersAndKeepsTheirBlocks(t *testing.T) {
	const in = `.:53 {
    health {
        lameduck 5s
    }
    ready
    prometheus :9153
    pprof localhost:6053
    readyz
    gatewaydns {
        endpoint http://etcd:2379
    }
}
other:5353 {
    health 0.0.0.0:8080 {
        lameduck 5s
    }
    ready
}
`
	const want = `.:53 {
    health 127.0.0.1:1 {
        lameduck 5s
    }
    ready 127.0.0.1:2
    prometheus 127.0.0.1:3
    pprof 127.0.0.1:4
    readyz
    gatewaydns {
        endpoint http://etcd:2379
    }
}
other:5353 {
    health 127.0.0.1:1 {
        lameduck 5s
    }
    ready 127.0.0.1:2
}
`
	if got := Localize(in, "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
