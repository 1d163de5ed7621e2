"""The agent's view of a web page and its hands on it: a text rendering with element ids,
and the ``click`` / ``type`` / ``select`` / ``press`` / ``scroll`` actions on those ids.

Shared by the MiniWoB++ and WebArena modes, so an agent trained on one reads the other.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

ACTION_HELP = (
    "click [id] | type [id] [text] | select [id] [option] | press [key] | scroll [up|down]"
)

_SCRIPT = resources.files(__package__).joinpath("page.js").read_text()

_ROLES = {"a": "link", "button": "button", "textarea": "textbox", "select": "combobox", "label": "label",
          "img": "img", "li": "listitem", "td": "cell", "th": "columnheader", "summary": "summary",
          "option": "option", "h1": "heading", "h2": "heading", "h3": "heading", "h4": "heading",
          "h5": "heading", "h6": "heading"}
_INPUT_ROLES = {"checkbox": "checkbox", "radio": "radio", "submit": "button", "button": "button",
                "reset": "button", "password": "password"}
_KEYS = {"enter": "ENTER", "return": "RETURN", "tab": "TAB", "escape": "ESCAPE", "esc": "ESCAPE",
         "backspace": "BACKSPACE", "delete": "DELETE", "space": "SPACE", "up": "ARROW_UP",
         "down": "ARROW_DOWN", "left": "ARROW_LEFT", "right": "ARROW_RIGHT", "home": "HOME",
         "end": "END", "pageup": "PAGE_UP", "pagedown": "PAGE_DOWN"}

_VERBS = ("click", "type", "select", "press", "scroll")
_BRACKETS = re.compile(r"\[([^\]]*)\]")


class InvalidAction(Exception):
    """The action cannot be parsed or applied; the message tells the agent why and what to do."""


@dataclass
class Action:
    verb: str
    target: int | None = None
    arg: str = ""


def snapshot(driver: Any, *, skip_ids: tuple[str, ...] = (), restart: bool = False, max_text: int = 200) -> dict:
    """Number the page's visible elements and return ``{url, title, elements, scroll}``."""
    return driver.execute_script(_SCRIPT, list(skip_ids), restart, max_text)


def render(snap: dict, *, max_elements: int = 200) -> str:
    """One line per element, indented by nesting: ``[7] button "Submit"``."""
    lines = []
    for el in snap["elements"][:max_elements]:
        lines.append("  " * min(el["depth"], 8) + _line(el))
    hidden = len(snap["elements"]) - max_elements
    if hidden > 0:
        lines.append(f"... {hidden} more elements not shown (scroll or act on what is shown)")
    y, max_y = snap.get("scroll", (0, 0))
    if max_y > 0:
        lines.append(f"(page scrolled {int(y)} of {int(max_y)} px)")
    return "\n".join(lines) if lines else "(the page shows nothing)"


def _line(el: dict) -> str:
    tag, kind = el["tag"], el.get("type")
    if tag in ("input", "textarea"):
        role = _INPUT_ROLES.get(kind, "textbox")
    else:
        role = el.get("role") or _ROLES.get(tag, tag)
    parts = [f"[{el['id']}] {role}"]
    text = el.get("text") or el.get("label") or ""
    if text:
        parts.append(_quote(text))
    if kind == "textarea":
        parts.append("multiline")
    elif kind and role == "textbox" and kind != "text":
        parts.append(f"type={kind}")
    if "value" in el and role not in ("button",):
        parts.append(f"value={_quote(el['value'])}")
    if "checked" in el:
        parts.append("checked" if el["checked"] else "unchecked")
    if el.get("options") is not None:
        parts.append("options=[" + ", ".join(_quote(o) for o in el["options"]) + "]")
    for key in ("placeholder", "title"):
        if el.get(key):
            parts.append(f"{key}={_quote(el[key])}")
    for flag in ("clickable", "focused", "disabled"):
        if el.get(flag):
            parts.append(flag)
    return " ".join(parts)


def _quote(s: str) -> str:
    return '"' + s.replace('"', '\\"') + '"'


def parse(text: str, extra: tuple[str, ...] = ()) -> Action:
    """Parse the first action line of *text* (``Action:`` prefix and code fences allowed).

    *extra* verbs (WebArena's ``stop``, ``goto``, ``go_back``) take one optional text argument.
    """
    verbs = "|".join(_VERBS + tuple(extra))
    text = text.replace("`", "")
    # an "Action:" line wins over a thought that happens to start with a verb
    match = re.search(rf"(?im)^\s*action\s*:\s*({verbs})\b(.*)$", text) or \
        re.search(rf"(?im)^\s*({verbs})\b(.*)$", text)
    if not match:
        help_text = ACTION_HELP + "".join(f" | {v}" + (" [text]" if v != "go_back" else "") for v in extra)
        raise InvalidAction(f"no action found in {text.strip()[:80]!r}; write one of: {help_text}")
    verb, rest = match.group(1).lower(), match.group(2).strip()
    args = _BRACKETS.findall(rest)
    if verb in extra:
        arg = rest[rest.index("[") + 1: rest.rindex("]")] if args else rest
        if verb == "goto" and not arg.strip():
            raise InvalidAction("goto needs a URL, e.g. goto [http://localhost:7770/]")
        return Action(verb, arg=arg.strip())
    if verb == "scroll":
        direction = (args[0] if args else rest).strip().lower() or "down"
        if direction not in ("up", "down"):
            raise InvalidAction(f"scroll takes 'up' or 'down', got {direction!r}; e.g. scroll [down]")
        return Action("scroll", arg=direction)
    if verb == "press":
        key = (args[0] if args else rest).strip()
        if key.lower() not in _KEYS and len(key) != 1:
            raise InvalidAction(f"unknown key {key!r}; use a single character or one of: {', '.join(sorted(_KEYS))}")
        return Action("press", arg=key)
    target_text = args[0] if args else (rest.split(maxsplit=1)[0] if rest else "")
    if not target_text.strip().isdigit():
        raise InvalidAction(f"{verb} needs an element id in brackets, e.g. {_example(verb)}; got {rest[:60]!r}")
    target = int(target_text)
    if verb == "click":
        return Action("click", target)
    if args[1:]:
        # the text is everything between the second '[' and the last ']', so it may hold brackets
        second = rest.index("[", rest.index("]") + 1)
        arg = rest[second + 1: rest.rindex("]")]
    elif args:
        arg = rest[rest.index("]") + 1:].strip()
    else:
        arg = rest.split(maxsplit=1)[1] if len(rest.split(maxsplit=1)) > 1 else ""
    if verb == "select" and not arg:
        raise InvalidAction(f"select needs an option, e.g. {_example(verb)}")
    return Action(verb, target, arg)


def _example(verb: str) -> str:
    return {"click": "click [12]", "type": "type [5] [hello world]", "select": "select [7] [Blue]"}[verb]


def execute(driver: Any, action: Action, *, native: bool = False) -> str:
    """Apply *action* to the page; return a short note of what happened (shown to the agent).

    Clicks are DOM clicks (``el.click()`` then focus, as MiniWoB's own element actions), about
    10x faster than WebDriver pointer events; ``native=True`` uses the pointer instead. Typing
    always sends real key events.
    """
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.keys import Keys

    if action.verb == "scroll":
        driver.execute_script("window.scrollBy(0, arguments[0] * window.innerHeight * 0.8);",
                              -1 if action.arg == "up" else 1)
        return f"scrolled {action.arg}"
    if action.verb == "press":
        key = getattr(Keys, _KEYS[action.arg.lower()]) if action.arg.lower() in _KEYS else action.arg
        target = driver.switch_to.active_element
        try:
            target.send_keys(key)
        except WebDriverException as exc:
            raise InvalidAction(f"pressing {action.arg!r} failed: {_msg(exc)}") from None
        return f"pressed {action.arg}"
    element, probe = _find(driver, action.target)
    if not probe["visible"]:
        raise InvalidAction(f"element [{action.target}] is not visible now; act on an element of the current page")
    try:
        if action.verb == "click":
            return _click(driver, element, action.target, native)
        if action.verb == "type":
            tag, kind = probe["tag"], probe["type"]
            if tag not in ("input", "textarea") and not probe["editable"]:
                raise InvalidAction(f"element [{action.target}] is a {tag}, not a text field; type into a textbox")
            if kind in ("checkbox", "radio", "submit", "button", "reset"):
                raise InvalidAction(f"element [{action.target}] is a {kind}; click it instead of typing")
            if native:
                element.click()
            driver.execute_script(_CLEAR, element)
            element.send_keys(action.arg)
            return f"typed {action.arg!r} into [{action.target}]"
        if probe["tag"] != "select":
            raise InvalidAction(f"element [{action.target}] is not a list (combobox); click it instead")
        return _select(driver, element, action)
    except InvalidAction:
        raise
    except WebDriverException as exc:
        raise InvalidAction(f"{action.verb} on [{action.target}] failed: {_msg(exc)}") from None


def _click(driver: Any, element: Any, ident: int, native: bool) -> str:
    from selenium.common.exceptions import WebDriverException

    if native:
        try:
            element.click()
            return f"clicked [{ident}]"
        except WebDriverException:
            pass  # covered or zero-size targets (custom widgets): the DOM click reaches the same handlers
    driver.execute_script(_DOM_CLICK, element)
    return f"clicked [{ident}]"


_DOM_CLICK = """
var el = arguments[0];
el.scrollIntoView({block: 'nearest'});
['mousedown', 'mouseup'].forEach(function (t) { el.dispatchEvent(new MouseEvent(t, {bubbles: true, cancelable: true, view: window})); });
if (el.focus) el.focus();
el.click();
"""

# focus the field, put the caret in it and empty it (with the events a user's select-all + delete fires)
_CLEAR = """
var el = arguments[0];
el.focus();
if (el.isContentEditable) { el.textContent = ''; } else { el.value = ''; }
el.dispatchEvent(new Event('input', {bubbles: true}));
"""


_SELECT = """
var el = arguments[0], wanted = arguments[1], texts = [], hit = -1;
for (var i = 0; i < el.options.length; i++) texts.push(el.options[i].text.trim());
hit = texts.indexOf(wanted);
if (hit < 0) hit = texts.map(function (t) { return t.toLowerCase(); }).indexOf(wanted.toLowerCase());
if (hit >= 0) {
  el.selectedIndex = hit;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
}
return [hit, texts];
"""


def _select(driver: Any, element: Any, action: Action) -> str:
    hit, options = driver.execute_script(_SELECT, element, action.arg.strip())
    if hit < 0:
        raise InvalidAction(f"[{action.target}] has no option {action.arg.strip()!r}; its options are {options[:20]}")
    return f"selected {options[hit]!r} in [{action.target}]"


_FIND = """
var el = document.querySelector('[data-agid="' + arguments[0] + '"]');
if (!el) return null;
var style = getComputedStyle(el);
return [el, {tag: el.tagName.toLowerCase(), type: (el.type || '').toLowerCase(), editable: el.isContentEditable,
             visible: el.getClientRects().length > 0 && style.visibility !== 'hidden' && style.display !== 'none'}];
"""


def _find(driver: Any, ident: int | None) -> tuple[Any, dict]:
    found = driver.execute_script(_FIND, ident)
    if not found:
        raise InvalidAction(f"there is no element [{ident}] on the page now; use an id from the current page")
    return found[0], found[1]


def _msg(exc: Exception) -> str:
    text = getattr(exc, "msg", None) or str(exc)
    return text.strip().splitlines()[0][:160] if text.strip() else type(exc).__name__
