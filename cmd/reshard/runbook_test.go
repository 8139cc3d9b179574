package main

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// runbookPath is the operations runbook; its "Alias cutover" section is
// the reshard procedure.
const runbookPath = "../../deploy/RUNBOOK.md"

// Every command in the runbook is a verb of this binary, with flags that
// verb has: the runbook matches the commands exactly.
func TestRunbookCommands(t *testing.T) {
	f, err := os.Open(runbookPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	help := map[string]string{}
	inCode, commands := false, 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "```") {
			inCode = !inCode
			continue
		}
		if !inCode || !strings.HasPrefix(text, "reshard ") {
			continue
		}
		commands++
		fields := strings.Fields(text)
		verb := fields[1]
		if _, ok := verbs[verb]; !ok {
			t.Errorf("RUNBOOK.md line %d: %q: no verb %s", line, text, verb)
			continue
		}
		if _, ok := help[verb]; !ok {
			_, out, _ := runCLI(t, verb, "--help")
			help[verb] = out
		}
		for _, f := range fields[2:] {
			if name, ok := strings.CutPrefix(f, "--"); ok {
				name, _, _ = strings.Cut(name, "=")
				if !strings.Contains(help[verb], "  -"+name+" ") && !strings.Contains(help[verb], "  -"+name+"\n") {
					t.Errorf("RUNBOOK.md line %d: reshard %s has no flag --%s", line, verb, name)
				}
			}
		}
	}
	if commands < 10 {
		t.Errorf("RUNBOOK.md: %d commands found, want the whole procedure", commands)
	}
	// The point of no return is marked.
	text, _ := os.ReadFile(runbookPath)
	if !strings.Contains(string(text), "point of no return") {
		t.Errorf("RUNBOOK.md does not mark the point of no return")
	}
}
