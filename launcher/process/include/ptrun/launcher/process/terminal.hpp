#pragma once
/// ptrun's controlling terminal, lent to one worker at a time as a job-control shell lends it to
/// its foreground job. Workers run in process groups of their own (signal forwarding and
/// orphan-proofing rely on it), so a worker that reads the terminal (input(), pdb, breakpoint())
/// or sets its modes (readline) is stopped by SIGTTIN or SIGTTOU; the agent then lends it the
/// terminal and continues it, and takes the terminal back when that worker exits or is stopped
/// by Ctrl-Z, and when ptrun ends.

#include <sys/types.h>
#include <termios.h>

namespace ptrun::launcher {

class TerminalLender {
  public:
    TerminalLender() = default;
    /// Takes the terminal back from a worker still holding it, and closes it.
    ~TerminalLender();
    TerminalLender(const TerminalLender&) = delete;
    TerminalLender& operator=(const TerminalLender&) = delete;

    enum class Outcome {
        Lent,     ///< `pgid` is the terminal's foreground now (still stopped)
        Busy,     ///< another worker holds the terminal
        NotOurs,  ///< ptrun has no controlling terminal or is not in its foreground (run with &)
    };
    /// Makes process group `pgid` (a worker of ptrun's session, stopped) the terminal's foreground,
    /// saving the terminal's modes; the caller continues it (after saying so: nothing ptrun writes
    /// then lands inside the worker's prompt). Never blocks; SIGTTOU is blocked meanwhile.
    Outcome lend(pid_t pgid);
    /// If `pgid` holds the terminal: makes ptrun's own group the foreground again and restores
    /// the modes saved when lending (a worker killed in raw mode). Returns whether it held it.
    bool reclaim(pid_t pgid);
    /// The process group holding the terminal, 0 when ptrun does.
    pid_t holder() const { return holder_; }

  private:
    int fd_ = -1;
    pid_t holder_ = 0;
    termios saved_{};
    bool saved_ok_ = false;
};

}  // namespace ptrun::launcher
