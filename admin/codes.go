package admin

import (
	"fmt"
	"strings"

	"github.com/rmqio/rmq/remoting"
)

// GetTimerCheckPoint and GetTimerMetrics are the 5.x timer admin codes.
const (
	GetTimerCheckPoint = remoting.GetTimerCheckPoint
	GetTimerMetrics    = remoting.GetTimerMetrics
)

// RequestName renders a request code as "NAME(code)", its name from the
// stock table of package remoting (remoting.RequestCodeText), or
// "request(code)" for a code that table does not name.
func RequestName(code int32) string {
	if n, ok := remoting.RequestCodeText(code); ok {
		return fmt.Sprintf("%s(%d)", strings.ToUpper(n), code)
	}
	return fmt.Sprintf("request(%d)", code)
}

// ResponseName is the stock name of a response code (remoting's table, in
// upper case), "UNKNOWN" if it has none.
func ResponseName(code int32) string {
	if n, ok := remoting.ResponseCodeText(code); ok {
		return strings.ToUpper(n)
	}
	return "UNKNOWN"
}
