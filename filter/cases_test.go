package filter

import (
	"encoding/json"
	"os"
	"testing"
)

// caseFile is testdata/cases.json, the table that both this package and the
// Java rocketmq-filter are checked against (integration/java:
// Client5FilterDifferentialTest).
type caseFile []struct {
	Expr   string `json:"expr"`
	Note   string `json:"note"`
	Since  string `json:"since"` // "5": needs 5.x (string operators)
	Error  bool   `json:"error"`
	Checks []struct {
		Props map[string]string `json:"props"`
		Want  string            `json:"want"` // TRUE, FALSE, NULL or FAILED
	} `json:"checks"`
}

func loadCases(t testing.TB) caseFile {
	t.Helper()
	b, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases caseFile
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestCasesTable(t *testing.T) {
	cases := loadCases(t)
	rows := 0
	for _, c := range cases {
		e, err := Compile(c.Expr)
		if c.Error {
			rows++
			if err == nil {
				t.Errorf("%q (%s): compiled, want a compile error", c.Expr, c.Note)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q (%s): %v", c.Expr, c.Note, err)
			continue
		}
		if len(c.Checks) == 0 {
			t.Errorf("%q: no checks and no error", c.Expr)
		}
		for _, ck := range c.Checks {
			rows++
			got := e.Evaluate(Map(ck.Props))
			if got.String() != ck.Want {
				t.Errorf("%q on %v (%s): got %s, want %s", c.Expr, ck.Props, c.Note, got, ck.Want)
			}
			if m := e.Match(Map(ck.Props)); m != (ck.Want == "TRUE") {
				t.Errorf("%q on %v: Match = %v, want %v", c.Expr, ck.Props, m, ck.Want == "TRUE")
			}
		}
	}
	if rows < 150 {
		t.Errorf("the table has %d rows, want at least 150", rows)
	}
}
