// The code editor of the problem page: CodeMirror 6 with Python highlighting, bundled by
// build.mjs into app/static/vendor/editor.js as the global `TJEditor`.
//
// Text goes in as it is typed or pasted: no re-indentation on input, no bracket closing, and
// Enter inserts a plain newline unless the user turns "auto-indent" on. Tab indents (four
// spaces); Escape then Tab (or Ctrl-M) moves the focus out of the editor.

import {
  defaultKeymap,
  history,
  historyKeymap,
  indentLess,
  indentMore,
  insertNewline,
  insertNewlineAndIndent,
  temporarilySetTabFocusMode,
} from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import {
  bracketMatching,
  HighlightStyle,
  indentUnit,
  syntaxHighlighting,
} from "@codemirror/language";
import { highlightSelectionMatches, searchKeymap } from "@codemirror/search";
import { Compartment, EditorSelection, EditorState, Prec } from "@codemirror/state";
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
} from "@codemirror/view";
import { tags as t } from "@lezer/highlight";

const INDENT = "    ";

// Colours chosen for contrast on a white background (all at least 4.5:1).
const highlight = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword], color: "#7c2d92", fontWeight: "600" },
  { tag: [t.operatorKeyword, t.self], color: "#7c2d92" },
  { tag: [t.string, t.special(t.string)], color: "#0a6b2c" },
  { tag: [t.number, t.bool, t.null], color: "#a3400c" },
  { tag: t.comment, color: "#5f6b7a", fontStyle: "italic" },
  { tag: [t.function(t.definition(t.variableName)), t.definition(t.className)], color: "#1d4ed8", fontWeight: "600" },
  { tag: t.function(t.variableName), color: "#1e40af" },
  { tag: [t.className, t.typeName], color: "#9a3412" },
  { tag: t.propertyName, color: "#1f2937" },
  { tag: t.definition(t.variableName), color: "#111827" },
  { tag: [t.operator, t.punctuation, t.bracket], color: "#374151" },
  { tag: t.invalid, color: "#b91c1c" },
]);

const theme = EditorView.theme({
  "&": { fontSize: "14px", backgroundColor: "#ffffff", color: "#111827", height: "100%" },
  ".cm-scroller": { fontFamily: "var(--font-mono)", lineHeight: "1.55", overflow: "auto" },
  ".cm-content": { padding: "10px 0", caretColor: "#111827" },
  ".cm-gutters": { backgroundColor: "#f5f5f4", color: "#6b7280", borderRight: "1px solid #e7e5e4" },
  ".cm-activeLine": { backgroundColor: "#f3f4f680" },
  ".cm-activeLineGutter": { backgroundColor: "#e7e5e4", color: "#1f2937" },
  "&.cm-focused": { outline: "none" },
  "&.cm-focused .cm-selectionBackground, ::selection": { backgroundColor: "#c7d2fe" },
  ".cm-selectionBackground": { backgroundColor: "#dbeafe" },
  ".cm-matchingBracket": { backgroundColor: "#e0e7ff", outline: "1px solid #a5b4fc" },
});

// Tab: with no selection, spaces up to the next multiple of four; with one, indent the lines.
function tabKey(view) {
  const { state } = view;
  if (state.selection.ranges.some((r) => !r.empty)) return indentMore(view);
  view.dispatch(
    state.changeByRange((range) => {
      const line = state.doc.lineAt(range.head);
      const col = range.head - line.from;
      const spaces = INDENT.length - (col % INDENT.length);
      return {
        changes: { from: range.head, insert: " ".repeat(spaces) },
        range: EditorSelection.cursor(range.head + spaces),
      };
    }),
    { userEvent: "input.indent", scrollIntoView: true },
  );
  return true;
}

function create(parent, options = {}) {
  const enterMode = new Compartment();
  const enterKey = (auto) =>
    Prec.high(keymap.of([{ key: "Enter", run: auto ? insertNewlineAndIndent : insertNewline }]));
  const onChange = options.onChange || (() => {});
  const state = EditorState.create({
    doc: options.doc || "",
    extensions: [
      lineNumbers(),
      highlightActiveLineGutter(),
      highlightSpecialChars(),
      history(),
      drawSelection(),
      EditorState.allowMultipleSelections.of(true),
      bracketMatching(),
      highlightActiveLine(),
      highlightSelectionMatches(),
      python(),
      syntaxHighlighting(highlight),
      indentUnit.of(INDENT),
      EditorState.tabSize.of(4),
      enterMode.of(enterKey(!!options.autoIndent)),
      keymap.of([
        { key: "Tab", run: tabKey, shift: indentLess },
        { key: "Escape", run: temporarilySetTabFocusMode },
        ...defaultKeymap,
        ...historyKeymap,
        ...searchKeymap,
      ]),
      theme,
      EditorView.contentAttributes.of({
        "aria-label": options.label || "Code editor",
        "aria-describedby": options.describedBy || "",
      }),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) onChange(u.state.doc.toString());
      }),
    ],
  });
  const view = new EditorView({ state, parent });
  return {
    view,
    getValue: () => view.state.doc.toString(),
    setValue: (text) =>
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    setAutoIndent: (on) => view.dispatch({ effects: enterMode.reconfigure(enterKey(!!on)) }),
    focus: () => view.focus(),
  };
}

window.TJEditor = { create };
