// Package harness runs the rmq binary as a child process for end-to-end tests:
// it builds the binary, picks free ports, writes a broker.conf, starts
// `rmq standalone`, waits for the stock readiness lines, and stops the process
// with SIGTERM (clean shutdown) or SIGKILL (crash), optionally restarting it on
// the same store directory and ports.
//
// One standalone process owns three TCP ports and one work directory:
//
//	+------------------------------- rmq standalone ------------------------------+
//	|  name server  0.0.0.0:NP        broker  0.0.0.0:BP  and  0.0.0.0:BP-2 (VIP) |
//	+-----------------------------------------------------------------------------+
//	   stdout: "The Name Server boot success..."
//	           "The broker[<name>, 127.0.0.1:BP] boot success..."
//
//	WorkDir/
//	  broker.conf   Config.BrokerConf lines, written before every start
//	  store/        --store-dir; survives Restart
//
// Everything the process prints on stdout and stderr is kept in memory, so a
// failing test can log what the broker said (Start does this automatically).
package harness
