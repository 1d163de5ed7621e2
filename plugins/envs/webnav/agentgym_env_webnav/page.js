// Lists the visible elements of the page for a text rendering, numbering each one with a
// data-agid attribute that stays the same until the next restart (a new episode).
// Arguments: skipIds (element ids never shown), restart (renumber from 1), maxText.
var skipIds = new Set(arguments[0] || []);
var restart = arguments[1];
var maxText = arguments[2] || 200;
if (restart || window.__agentgym_next === undefined) {
  document.querySelectorAll('[data-agid]').forEach(function (e) { e.removeAttribute('data-agid'); });
  window.__agentgym_next = 1;
}
var SKIP = {SCRIPT: 1, STYLE: 1, NOSCRIPT: 1, TEMPLATE: 1, HEAD: 1, META: 1, LINK: 1, BR: 1, CANVAS: 1};
var CONTROLS = {A: 1, BUTTON: 1, INPUT: 1, TEXTAREA: 1, SELECT: 1, SUMMARY: 1, OPTION: 1};
var CLICK_ROLES = {button: 1, link: 1, tab: 1, menuitem: 1, option: 1, checkbox: 1, radio: 1, treeitem: 1, switch: 1};
var out = [];

function clip(s) {
  s = (s || '').replace(/\s+/g, ' ').trim();
  return s.length > maxText ? s.slice(0, maxText) + '...' : s;
}
function ownText(el) {
  var t = '';
  el.childNodes.forEach(function (n) { if (n.nodeType === 3) t += ' ' + n.data; });
  return clip(t);
}
function clickable(el, style) {
  if (el.onclick || el.__onclick || el.getAttribute('onclick')) return true;
  if (el.hasAttribute('tabindex') && el.getAttribute('tabindex') !== '-1') return true;
  if (CLICK_ROLES[el.getAttribute('role')]) return true;
  if (window.jQuery && jQuery._data) {
    var ev = jQuery._data(el, 'events');
    if (ev && (ev.click || ev.mousedown || ev.mouseup)) return true;
  }
  return style.cursor === 'pointer' && !(el.parentElement && getComputedStyle(el.parentElement).cursor === 'pointer');
}
function walk(el, depth) {
  if (SKIP[el.tagName] || skipIds.has(el.id)) return;
  var style = getComputedStyle(el);
  if (style.display === 'none') return;
  var rect = el.getBoundingClientRect();
  var shown = style.visibility !== 'hidden' && rect.width > 0 && rect.height > 0;
  var tag = el.tagName;
  var text = tag === 'TEXTAREA' ? '' : ownText(el);
  if (!text && (tag === 'A' || tag === 'BUTTON' || tag === 'LABEL' || /^H[1-6]$/.test(tag) || tag === 'SUMMARY'))
    text = clip(el.innerText);
  var isControl = !!CONTROLS[tag];
  var click = !isControl && clickable(el, style);
  var item = null;
  if (shown && (text || isControl || click || tag === 'IMG' || el === document.activeElement && el !== document.body)) {
    if (!el.dataset.agid) el.dataset.agid = window.__agentgym_next++;
    item = {id: +el.dataset.agid, tag: tag.toLowerCase(), depth: depth, text: text};
    if (click) item.clickable = true;
    if (el.getAttribute('role')) item.role = el.getAttribute('role');
    if (el === document.activeElement) item.focused = true;
    if (el.disabled) item.disabled = true;
    var title = el.getAttribute('title') || el.getAttribute('aria-label');
    if (title) item.title = clip(title);
    if (tag === 'IMG') item.text = clip(el.getAttribute('alt') || '');
    if (tag === 'INPUT' || tag === 'TEXTAREA') {
      item.type = tag === 'TEXTAREA' ? 'textarea' : (el.type || 'text');
      if (item.type === 'checkbox' || item.type === 'radio') item.checked = el.checked;
      else item.value = clip(el.value);
      if (el.placeholder) item.placeholder = clip(el.placeholder);
      if (el.labels && el.labels.length) item.label = clip(el.labels[0].innerText);
    }
    if (tag === 'SELECT') {
      item.options = Array.prototype.map.call(el.options, function (o) { return clip(o.text); });
      item.value = el.selectedIndex >= 0 ? clip(el.options[el.selectedIndex].text) : '';
    }
    out.push(item);
  }
  if (tag === 'SELECT') return;
  var childDepth = item ? depth + 1 : depth;
  for (var i = 0; i < el.children.length; i++) walk(el.children[i], childDepth);
}
if (document.body) walk(document.body, 0);
return {url: location.href, title: document.title, elements: out,
        scroll: [window.scrollY, Math.max(0, document.documentElement.scrollHeight - window.innerHeight)]};
