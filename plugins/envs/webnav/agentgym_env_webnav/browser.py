"""One headless Chromium per env session, started with flags that work in a sandbox and
offline, and torn down completely (driver, browser processes, profile directory), even when
the process that started it is SIGKILLed (see :class:`_Guard`). A closed session's browser is
cleaned and kept for the next session (:class:`BrowserPool`) rather than started again."""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path

from agentgym_core import AgentGymError

#: Headless, no GPU, no sandbox (containers run as root), and no background traffic: on a
#: closed network Chromium's update/sync/QUIC probes otherwise stall page loads.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
)

_BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class BrowserNotFound(AgentGymError):
    """Chromium or chromedriver is not installed where the env looks for it."""


class BrowserError(AgentGymError):
    """Chromium failed to start or to load a page."""


def find_binaries(chromium: str = "", chromedriver: str = "") -> tuple[str, str]:
    """Paths of the browser and its driver: the given ones, ``$AGENTGYM_CHROMIUM`` /
    ``$AGENTGYM_CHROMEDRIVER``, or the first found on ``PATH``."""
    browser = chromium or os.environ.get("AGENTGYM_CHROMIUM", "")
    driver = chromedriver or os.environ.get("AGENTGYM_CHROMEDRIVER", "")
    if not browser:
        browser = next((p for p in map(shutil.which, _BINARIES) if p), "")
    if not driver:
        driver = shutil.which("chromedriver") or ""
    missing = [name for name, path in (("chromium", browser), ("chromedriver", driver)) if not path or not Path(path).exists()]
    if missing:
        raise BrowserNotFound(
            f"webnav env: {' and '.join(missing)} not found (looked at env.chromium/env.chromedriver, "
            "$AGENTGYM_CHROMIUM/$AGENTGYM_CHROMEDRIVER and PATH). Install the Debian packages "
            "'chromium chromium-driver' (scripts/setup.sh does) or set those options to the binaries."
        )
    return browser, driver


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def process_tree(pid: int) -> list[int]:
    """*pid* and all its descendants (Linux ``/proc``; just ``[pid]`` elsewhere)."""
    if not os.path.isdir("/proc"):
        return [pid]
    kids = _children()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Browser:
    """A Selenium-driven headless Chromium with its own throw-away profile.

    :meth:`quit` is idempotent and also runs at interpreter exit; it kills any process of the
    driver's tree that ``driver.quit()`` left behind, so no Chromium outlives its session.
    """

    def __init__(self, *, chromium: str = "", chromedriver: str = "", width: int = 800, height: int = 600,
                 page_load_timeout_s: float = 30.0) -> None:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service

        browser, driver = find_binaries(chromium, chromedriver)
        self.profile = tempfile.mkdtemp(prefix="agentgym-webnav-")
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}"):
            options.add_argument(flag)
        guard = _Guard(self.profile)

        class GuardedService(Service):
            def start(self) -> None:  # the guard learns the group before Chromium is launched
                try:
                    super().start()
                finally:
                    if getattr(self, "process", None) is not None:
                        guard.watch(self.process.pid)

        # its own process group, which Chromium inherits: the guard kills the whole tree at once
        service = GuardedService(executable_path=driver, log_output=subprocess.DEVNULL,
                                 popen_kw={"start_new_session": True})
        try:
            self.driver = webdriver.Chrome(service=service, options=options)
        except BaseException as exc:
            if getattr(service, "process", None) is not None:
                _kill_group(service.process.pid)
            guard.release()
            shutil.rmtree(self.profile, ignore_errors=True)
            if not isinstance(exc, WebDriverException):
                raise
            raise BrowserError(
                f"webnav env: Chromium ({browser}) did not start through {driver}: {exc.msg or exc}. "
                "Check that the chromium and chromium-driver versions match."
            ) from exc
        self.driver.set_page_load_timeout(page_load_timeout_s)
        self.driver_pid = service.process.pid
        self.pids = process_tree(self.driver_pid)
        self._down = threading.Event()  # set once the teardown has finished, profile folder included
        self._finalizer = weakref.finalize(self, _shutdown, self.driver, self.driver_pid, self.profile, guard,
                                           self._down)
        atexit.register(self._finalizer)

    def memory_kib(self) -> int:
        """Proportional set size (PSS) of the driver and every browser process, in KiB."""
        return sum(_pss_kib(p) for p in process_tree(self.driver_pid))

    @property
    def closed(self) -> bool:
        """Whether the teardown has finished: driver and browser gone, the profile folder deleted."""
        return self._down.is_set()

    def quit(self) -> None:
        """Stop the browser and the driver and delete the profile; safe to call twice, from any thread: a call
        while another thread's teardown runs waits for it (at most 15 s)."""
        self._finalizer()
        self._down.wait(15.0)

    def responsive(self) -> bool:
        """Whether the driver still answers (a browser kept idle may have been killed meanwhile)."""
        if self.closed or not _alive(self.driver_pid):
            return False
        try:
            self.driver.execute_script("return 1;")
            return True
        except Exception:  # noqa: BLE001 - any driver error means: do not reuse it
            return False

    def clean(self) -> bool:
        """Make the browser look freshly started to the next session: extra windows closed, every cookie, the
        cache and the current page's storage cleared, ``about:blank`` loaded. False when any of it fails."""
        try:
            driver = self.driver
            handles = driver.window_handles
            for handle in handles[1:]:
                driver.switch_to.window(handle)
                driver.close()
            driver.switch_to.window(handles[0])
            driver.execute_script("try { localStorage.clear(); sessionStorage.clear(); } catch (e) {}")
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
            driver.execute_cdp_cmd("Network.clearBrowserCache", {})
            driver.get("about:blank")
            return True
        except Exception:  # noqa: BLE001 - a browser that cannot be cleaned is quit, not reused
            return False


class BrowserPool:
    """Idle browsers of this process, kept for the next session instead of being quit.

    Starting Chromium costs 1-2 s of CPU, and a rollout opens a session per episode: without a pool every webnav
    episode starts a browser. A closed session's browser is cleaned first (extra windows closed, every cookie and the
    page's storage cleared, ``about:blank`` loaded; a browser that fails any of it is quit), then kept while fewer than
    *keep* are idle. An idle browser is quit after *idle_s* seconds, at interpreter exit, or with the process (its
    guard), like any other. Thread-safe: an env server runs sessions on a thread pool.
    """

    def __init__(self) -> None:
        self._idle: list[tuple[tuple, float, Browser]] = []  # (key, deadline, browser), oldest first
        self._cond = threading.Condition()
        self._reaper: threading.Thread | None = None
        self.reused = 0  #: sessions that got a kept browser instead of a new one

    def take(self, key: tuple) -> "Browser | None":
        """The most recently kept idle browser started with *key*, if one is alive; else None."""
        while True:
            with self._cond:
                found = next((i for i in range(len(self._idle) - 1, -1, -1) if self._idle[i][0] == key), None)
                if found is None:
                    return None
                browser = self._idle.pop(found)[2]
            if browser.responsive():
                with self._cond:
                    self.reused += 1
                return browser
            browser.quit()  # died while idle (OOM killer, a crash): try the next one

    def give(self, key: tuple, browser: "Browser", *, keep: int, idle_s: float) -> None:
        """Keep *browser* for the next session started with *key*, or quit it (pool full, or it cannot be cleaned)."""
        if keep <= 0 or idle_s <= 0 or browser.closed or not browser.clean():
            browser.quit()
            return
        with self._cond:
            self._idle.append((key, time.monotonic() + idle_s, browser))
            extra = [entry for entry in self._idle if entry[0] == key][:-keep]
            self._idle = [entry for entry in self._idle if not any(entry is e for e in extra)]
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name="webnav-browser-pool", daemon=True)
                self._reaper.start()
            self._cond.notify()
        for _, _, old in extra:
            old.quit()

    def idle(self) -> int:
        with self._cond:
            return len(self._idle)

    def clear(self) -> None:
        """Quit every idle browser now."""
        with self._cond:
            idle, self._idle = self._idle, []
        for _, _, browser in idle:
            browser.quit()

    def _reap(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                expired = [entry for entry in self._idle if entry[1] <= now]
                self._idle = [entry for entry in self._idle if entry[1] > now]
                if not expired:
                    self._cond.wait(min((entry[1] for entry in self._idle), default=now + 3600) - now)
                    continue
            for _, _, browser in expired:
                browser.quit()


#: This process's idle browsers (see :class:`BrowserPool`; ``env.browser_pool`` sets how many are kept).
POOL = BrowserPool()


#: Reads the browser's process group id, then blocks on a pipe that only this process writes
#: to; EOF means the process is gone (exited, or SIGKILLed), and then the group goes too, and
#: the profile folder ($1) with it once the group has had a moment to die. Deaf to the signals a
#: terminal or a launcher sends to the server's group.
_GUARD_SCRIPT = ("trap '' HUP INT TERM QUIT; if read pgid; then read _; kill -s KILL -- \"-$pgid\"; sleep 1; fi; "
                 "rm -rf -- \"$1\"")


class _Guard:
    """A ``sh`` watchdog (~1.7 MB RSS) that SIGKILLs the browser's process group when this process dies,
    then deletes the browser's *profile* folder (a normal shutdown releases the guard and deletes it itself).

    ``PR_SET_PDEATHSIG`` on chromedriver would not do: Chromium outlives a killed chromedriver,
    and the signal fires when the creating *thread* ends. A pipe's EOF has neither problem.
    """

    def __init__(self, profile: str) -> None:
        read, self.fd = os.pipe()  # both ends close-on-exec: no other child keeps the pipe open
        try:
            self.proc = subprocess.Popen(["/bin/sh", "-c", _GUARD_SCRIPT, "agentgym-webnav-guard", profile], stdin=read,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except BaseException:
            os.close(self.fd)
            raise
        finally:
            os.close(read)

    def watch(self, pgid: int) -> None:
        os.write(self.fd, f"{pgid}\n".encode())

    def release(self) -> None:
        """Stop watching (the browser was shut down normally); idempotent."""
        if self.fd >= 0:
            self.proc.kill()
            self.proc.wait()
            os.close(self.fd)
            self.fd = -1


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _shutdown(driver, driver_pid: int, profile: str, guard: _Guard, down: threading.Event) -> None:
    try:
        _teardown(driver, driver_pid, profile, guard)
    finally:
        down.set()


def _teardown(driver, driver_pid: int, profile: str, guard: _Guard) -> None:
    tree = process_tree(driver_pid)
    if _alive(driver_pid):  # a dead driver would only be retried over HTTP for seconds
        try:
            driver.quit()
        except Exception:  # noqa: BLE001 - a dead driver is what we want anyway
            pass
    deadline = time.monotonic() + 3.0
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in tree:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    _kill_group(driver_pid)  # anything of the browser's group that left the driver's tree
    guard.release()
    shutil.rmtree(profile, ignore_errors=True)
