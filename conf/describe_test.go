package conf

import (
	"reflect"
	"testing"
	"time"
)

func TestDescribe(t *testing.T) {
	type Inner struct {
		Name string `conf:"name"`
	}
	type first struct {
		Inner
		Port  int           `conf:"listenPort"`
		Wait  time.Duration `conf:"waitMs"`
		Idle  time.Duration `conf:"idleSec,s"`
		Skip  string        `conf:"-"`
		Ratio float64       `conf:"ratio"`
	}
	type second struct {
		Port int  `conf:"listenPort"` // bound by first already
		On   bool `conf:"on"`
	}
	got := Describe(&first{Inner: Inner{Name: "a"}, Port: 9876, Wait: 1500 * time.Millisecond, Idle: 2 * time.Minute, Ratio: 0.5}, second{Port: 1, On: true}, 42)
	want := []KeyInfo{
		{Key: "name", Default: "a", Type: "string"},
		{Key: "listenPort", Default: "9876", Type: "int"},
		{Key: "waitMs", Default: "1500", Type: "duration (ms)"},
		{Key: "idleSec", Default: "120", Type: "duration (s)"},
		{Key: "ratio", Default: "0.5", Type: "float64"},
		{Key: "on", Default: "true", Type: "bool"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Describe =\n%+v\nwant\n%+v", got, want)
	}
}
