package backoff

import (
	"context"
	"testing"
	"time"
)

func TestBackoffDoublesUpToMaxAndResets(t *testing.T) {
	b := New(100*time.Millisecond, 500*time.Millisecond)
	want := []time.Duration{100, 200, 400, 500, 500}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("delay %d = %s, want %s", i, got, w*time.Millisecond)
		}
	}
	b.Reset()
	if got := b.Next(); got != 100*time.Millisecond {
		t.Fatalf("after Reset: %s, want 100ms", got)
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	b := New(time.Hour, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Sleep(ctx) {
		t.Fatal("Sleep reported a full delay for a canceled context")
	}
	if !New(time.Millisecond, time.Millisecond).Sleep(context.Background()) {
		t.Fatal("Sleep of 1ms did not report a full delay")
	}
}

func TestWaitEndsEarlyWhenTheCauseIsGoneButStillDoubles(t *testing.T) {
	b := New(time.Hour, 4*time.Hour)
	early := make(chan struct{})
	close(early)
	if b.Wait(context.Background(), early) {
		t.Fatal("Wait reported a full delay although early was closed")
	}
	if got := b.Next(); got != 2*time.Hour {
		t.Fatalf("after an early end the next delay is %s, want it doubled to 2h", got)
	}
}
