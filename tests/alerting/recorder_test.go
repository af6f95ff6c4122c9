package alerting

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/promtext"
)

// recording is what a Prometheus scraping the scenario's processes every step would store: the
// series the rules read, each labelled with its target's job and instance, an up series per
// target, and a stale marker where a target stops answering. Time 0 is the recording's start;
// series holding Unix times (…_timestamp_seconds) are moved by the same offset, so that the
// rules' time() - x means what it means in production.
type recording struct {
	step   time.Duration
	t0     time.Time
	wanted func(name string) bool

	mu      sync.Mutex
	n       int               // steps recorded
	series  map[string][]cell // series (promql notation) -> one cell per step
	targets []*target
	stop    chan struct{}
	done    chan struct{}
}

type target struct {
	job  string
	proc *corednsproc.Process
	live map[string]bool // series of the target's last successful scrape

	// frozen: metric names whose series keep, from the step frozen was set, the value they had
	// then (held), whatever the target exports.
	frozen map[string]bool
	held   map[string]float64
}

// cell is one step of a series: a value, nothing, or the stale marker of a failed scrape.
type cell struct {
	set, stale bool
	v          float64
}

func newRecording(step time.Duration, wanted func(string) bool) *recording {
	return &recording{step: step, wanted: wanted, series: map[string][]cell{}}
}

// add scrapes p as job from the next step on.
func (r *recording) add(job string, p *corednsproc.Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.targets = append(r.targets, &target{job: job, proc: p, live: map[string]bool{}})
}

// freeze records p's series of the metric name from the next scrape on at the value they have
// then: what a process would export whose metric stopped moving without its knowing, a fault no process
// shows of itself (see staleReplica).
func (r *recording) freeze(p *corednsproc.Process, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tg := range r.targets {
		if tg.proc == p {
			if tg.frozen == nil {
				tg.frozen, tg.held = map[string]bool{}, map[string]float64{}
			}
			tg.frozen[name] = true
		}
	}
}

// start scrapes every target every step until stop.
func (r *recording) start() {
	r.t0 = time.Now()
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		client := &http.Client{Timeout: r.step / 2}
		for i := 0; ; i++ {
			r.scrapeAll(client, i)
			select {
			case <-r.stop:
				return
			case <-time.After(time.Until(r.t0.Add(time.Duration(i+1) * r.step))):
			}
		}
	}()
}

func (r *recording) finish() {
	close(r.stop)
	<-r.done
}

// at is the recording's time of a moment, as the rules' evaluation sees it.
func (r *recording) at(t time.Time) time.Duration { return t.Sub(r.t0) }

func (r *recording) scrapeAll(client *http.Client, i int) {
	r.mu.Lock()
	targets := slices.Clone(r.targets)
	r.mu.Unlock()
	bodies := make([]string, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for k, tg := range targets {
		wg.Go(func() { bodies[k], errs[k] = tg.proc.Scrape(client) })
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n = i + 1
	for k, tg := range targets {
		up := 0.0
		if errs[k] == nil {
			if seen, err := r.parse(tg, bodies[k]); err == nil {
				up = 1
				for s := range tg.live {
					if !seen[s] {
						r.put(s, i, cell{stale: true})
					}
				}
				tg.live = seen
			}
		}
		if up == 0 {
			for s := range tg.live {
				r.put(s, i, cell{stale: true})
			}
			clear(tg.live)
		}
		r.put(fmt.Sprintf(`up{instance=%q,job=%q}`, tg.proc.Metrics, tg.job), i, cell{set: true, v: up})
	}
}

func (r *recording) put(series string, i int, c cell) {
	cells := r.series[series]
	for len(cells) <= i {
		cells = append(cells, cell{})
	}
	cells[i] = c
	r.series[series] = cells
}

// parse stores the wanted series of one scrape of tg at step n-1 and returns their names.
func (r *recording) parse(tg *target, body string) (map[string]bool, error) {
	samples, err := promtext.Parse(body)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	i := r.n - 1
	for _, s := range samples {
		if !r.wanted(s.Family) {
			continue
		}
		v := s.Value
		if strings.HasSuffix(s.Name, "_timestamp_seconds") && v != 0 {
			v -= float64(r.t0.UnixNano()) / 1e9
		}
		key := seriesKey(s, tg)
		if tg.frozen[s.Name] {
			if held, ok := tg.held[key]; ok {
				v = held
			} else {
				tg.held[key] = v
			}
		}
		seen[key] = true
		r.put(key, i, cell{set: true, v: v})
	}
	return seen, nil
}

// seriesKey is a sample of tg in PromQL notation, with the target's instance and job labels.
func seriesKey(s promtext.Sample, tg *target) string {
	parts := []string{"instance=" + strconv.Quote(tg.proc.Metrics), "job=" + strconv.Quote(tg.job)}
	for k, v := range s.Labels {
		parts = append(parts, k+"="+strconv.Quote(v))
	}
	sort.Strings(parts)
	return s.Name + "{" + strings.Join(parts, ",") + "}"
}

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// values is a series' cells in promtool's input_series notation: "a" a value, "_" no sample,
// "stale" the marker; runs of one value are written "axN" (N+1 samples of a).
func values(cells []cell, n int) string {
	var b []string
	for i := 0; i < n; {
		var c cell
		if i < len(cells) {
			c = cells[i]
		}
		switch {
		case c.stale:
			b = append(b, "stale")
			i++
		case !c.set || math.IsNaN(c.v):
			b = append(b, "_")
			i++
		default:
			j := i + 1
			for j < n && j < len(cells) && cells[j].set && !cells[j].stale && cells[j].v == c.v {
				j++
			}
			if j-i == 1 {
				b = append(b, formatFloat(c.v))
			} else {
				b = append(b, fmt.Sprintf("%sx%d", formatFloat(c.v), j-i-1))
			}
			i = j
		}
	}
	return strings.Join(b, " ")
}

// metricNames are the metric names an expression file mentions (a rule file, a dashboard):
// what a recording needs to keep.
func metricNames(text string) map[string]bool {
	names := map[string]bool{"up": true}
	for _, m := range regexp.MustCompile(`\b(coredns_[a-z0-9_]+)`).FindAllString(text, -1) {
		names[m] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			names[strings.TrimSuffix(m, suffix)] = true
		}
	}
	return names
}
