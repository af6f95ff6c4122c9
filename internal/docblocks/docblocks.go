// Package docblocks reads the code blocks of the repository's Markdown documents, so that tests
// can run the commands the documents show and compare what they print with what the documents
// say they print.
package docblocks

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Block is a code block of a Markdown file: fenced (``` or ~~~) or indented by four spaces.
type Block struct {
	File  string
	Line  int    // of its first line of code, 1-based
	Info  string // a fenced block's info string, e.g. sh or corefile
	Lines []string
}

// Where is the block's place, file:line.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Step is one command of a transcript block ("$ command") and the lines it prints.
type Step struct {
	Line    int
	Command string
	Output  []string
}

// Steps are the block's commands, each with the lines up to the next command: nil when the
// block has no "$ " line, not a transcript.
func (b Block) Steps() []Step {
	var steps []Step
	for i, l := range b.Lines {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			steps = append(steps, Step{Line: b.Line + i, Command: cmd})
			continue
		}
		if len(steps) > 0 {
			steps[len(steps)-1].Output = append(steps[len(steps)-1].Output, l)
		}
	}
	return steps
}

var (
	fence    = regexp.MustCompile("^\\s*(```|~~~)\\s*(\\S*)")
	indented = regexp.MustCompile(`^( {4}|\t)\s*\S`)
)

// Read returns the code blocks of a Markdown file. An indented block starts after a blank
// line; one inside a list item is indented by its list's indent on top (deploy/README.md's
// steps), which Read takes as a block too, without that indent.
func Read(file string) ([]Block, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		if m := fence.FindStringSubmatch(lines[i]); m != nil {
			blk := Block{File: file, Line: i + 2, Info: m[2]}
			indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), m[1]); i++ {
				blk.Lines = append(blk.Lines, trimIndent(lines[i], indent))
			}
			blocks = append(blocks, blk)
			continue
		}
		if i == 0 || strings.TrimSpace(lines[i-1]) != "" || !indented.MatchString(lines[i]) || listText(lines, i) {
			continue
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		blk := Block{File: file, Line: i + 1}
		for ; i < len(lines); i++ {
			l := lines[i]
			if strings.TrimSpace(l) == "" {
				if i+1 < len(lines) && strings.HasPrefix(lines[i+1], strings.Repeat(" ", indent)) {
					blk.Lines = append(blk.Lines, "")
					continue
				}
				break
			}
			if !strings.HasPrefix(l, strings.Repeat(" ", indent)) {
				break
			}
			blk.Lines = append(blk.Lines, l[indent:])
		}
		blocks = append(blocks, blk)
	}
	return blocks, nil
}

// listText says whether line i continues a list item's text (indented to the item's text,
// after a blank line) rather than starting a code block: the nearest line above at a smaller
// indent is a list item whose text starts at the same indent.
func listText(lines []string, i int) bool {
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
	for j := i - 1; j >= 0; j-- {
		l := lines[j]
		if strings.TrimSpace(l) == "" {
			continue
		}
		in := len(l) - len(strings.TrimLeft(l, " "))
		if in >= indent {
			continue
		}
		m := listItem.FindStringSubmatch(l)
		return m != nil && len(m[0]) == indent
	}
	return false
}

var listItem = regexp.MustCompile(`^\s*([-*]|\d+\.)\s+`)

func trimIndent(l string, n int) string {
	for k := 0; k < n && strings.HasPrefix(l, " "); k++ {
		l = l[1:]
	}
	return l
}

// varying are the parts of a DNS or etcd answer that differ from run to run: a message id, a
// zone's SOA serial (the etcd revision), explain's revision and time, the record id of a key a
// writer made.
var varying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bid: \d+`), "id: N"},
	{regexp.MustCompile(`(\sSOA\s+\S+\s+\S+\s+)\d+`), "${1}SERIAL"},
	{regexp.MustCompile(`"revision=\d+"`), `"revision=N"`},
	{regexp.MustCompile(`"seen=[^"]*"`), `"seen=T"`},
	{regexp.MustCompile(`(key=/skydns/\S+/)[0-9a-f]{8}"`), `${1}ID"`},
}

// Normalize is a line of output with its varying parts replaced and its blanks collapsed (dig
// aligns with tabs, a document with spaces).
func Normalize(l string) string {
	for _, v := range varying {
		l = v.re.ReplaceAllString(l, v.with)
	}
	return strings.Join(strings.Fields(l), " ")
}

// Lines are the normalized non-blank lines of s.
func Lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if n := Normalize(l); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Command is the block of file whose first line starts with prefix, its lines joined: a
// documented command line, continued lines and all, as a shell runs it.
func Command(file, prefix string) (string, error) {
	blocks, err := Read(file)
	if err != nil {
		return "", err
	}
	for _, b := range blocks {
		if strings.HasPrefix(b.Lines[0], prefix) {
			return strings.Join(b.Lines, "\n"), nil
		}
	}
	return "", fmt.Errorf("%s shows no block starting with %q", file, prefix)
}
