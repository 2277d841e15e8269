// The studio's two editors behind one small global, window.QuireEditors.
// TipTap (on ProseMirror) edits rich text as HTML; CodeMirror 6 edits code
// and markdown. The studio's own scripts only ever talk to this API, so a
// library can be updated (or swapped) without touching the pages.
//
//   QuireEditors.richText(host, {html, label, onChange(html)})
//     -> {getHTML(), setHTML(html), focus(), destroy()}
//     A toolbar (role=toolbar; bold, italic, strike, heading 2 and 3, bullet
//     and numbered list, blockquote, code block, link, remove link, undo,
//     redo), then the editable area (role=textbox, labelled by `label`).
//     getHTML() is "" for an empty document; setHTML() does not call
//     onChange.
//   QuireEditors.code(host, {doc, language, label, onChange(text)})
//     -> {getValue(), setValue(text), focus(), destroy()}
//     language: markdown (wrapped lines), html, css, javascript, json or
//     text; any other is edited as text. setValue() does not call onChange.
//
// Both add their elements to `host` and remove them again on destroy().
import { Editor } from '@tiptap/core';
import StarterKit from '@tiptap/starter-kit';
import Link from '@tiptap/extension-link';
import { basicSetup } from 'codemirror';
import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { markdown, markdownLanguage } from '@codemirror/lang-markdown';
import { html as htmlLanguage } from '@codemirror/lang-html';
import { css } from '@codemirror/lang-css';
import { javascript } from '@codemirror/lang-javascript';
import { json } from '@codemirror/lang-json';

let uid = 0;
function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function noop() {}

// Links typed into the link box: web, mail and phone addresses, and
// addresses without a scheme (same site). Other schemes (javascript:,
// data:...) are refused here; the server's sanitiser drops them anyway.
const ALLOWED_SCHEMES = ['http', 'https', 'mailto', 'tel'];
function allowedLink(href) {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(href);
  return scheme === null || ALLOWED_SCHEMES.includes(scheme[1].toLowerCase());
}

// The toolbar, in order. `toggle` buttons carry aria-pressed; `enabled`
// says when a button can act (shown with aria-disabled so it stays
// reachable by keyboard).
const BUTTONS = [
  { name: 'bold', label: 'Bold', text: 'B', keys: 'Ctrl+B', run: (c) => c.toggleBold(), active: (e) => e.isActive('bold') },
  { name: 'italic', label: 'Italic', text: 'I', keys: 'Ctrl+I', run: (c) => c.toggleItalic(), active: (e) => e.isActive('italic') },
  { name: 'strike', label: 'Strikethrough', text: 'S', keys: 'Ctrl+Shift+S', run: (c) => c.toggleStrike(), active: (e) => e.isActive('strike') },
  { name: 'h2', label: 'Heading 2', text: 'H2', keys: 'Ctrl+Alt+2', run: (c) => c.toggleHeading({ level: 2 }), active: (e) => e.isActive('heading', { level: 2 }) },
  { name: 'h3', label: 'Heading 3', text: 'H3', keys: 'Ctrl+Alt+3', run: (c) => c.toggleHeading({ level: 3 }), active: (e) => e.isActive('heading', { level: 3 }) },
  { name: 'bullets', label: 'Bullet list', text: '• List', keys: 'Ctrl+Shift+8', run: (c) => c.toggleBulletList(), active: (e) => e.isActive('bulletList') },
  { name: 'numbers', label: 'Numbered list', text: '1. List', keys: 'Ctrl+Shift+7', run: (c) => c.toggleOrderedList(), active: (e) => e.isActive('orderedList') },
  { name: 'quote', label: 'Blockquote', text: 'Quote', keys: 'Ctrl+Shift+B', run: (c) => c.toggleBlockquote(), active: (e) => e.isActive('blockquote') },
  { name: 'codeblock', label: 'Code block', text: 'Code', keys: 'Ctrl+Alt+C', run: (c) => c.toggleCodeBlock(), active: (e) => e.isActive('codeBlock') },
  { name: 'link', label: 'Link', text: 'Link', active: (e) => e.isActive('link') },
  { name: 'unlink', label: 'Remove link', text: 'Unlink', run: (c) => c.extendMarkRange('link').unsetLink(), enabled: (e) => e.isActive('link') },
  { name: 'undo', label: 'Undo', text: 'Undo', keys: 'Ctrl+Z', run: (c) => c.undo(), enabled: (e) => e.can().undo() },
  { name: 'redo', label: 'Redo', text: 'Redo', keys: 'Ctrl+Shift+Z', run: (c) => c.redo(), enabled: (e) => e.can().redo() },
];

// Arrow keys, Home and End move between the toolbar's buttons; Tab enters
// the toolbar once and leaves it (the WAI-ARIA toolbar pattern).
function rovingFocus(toolbar, buttons) {
  buttons.forEach((b, i) => b.setAttribute('tabindex', i === 0 ? '0' : '-1'));
  const move = (to) => {
    buttons.forEach((b) => b.setAttribute('tabindex', '-1'));
    buttons[to].setAttribute('tabindex', '0');
    buttons[to].focus();
  };
  toolbar.addEventListener('keydown', (event) => {
    const at = buttons.indexOf(document.activeElement);
    if (at < 0) return;
    const last = buttons.length - 1;
    const to = { ArrowRight: at === last ? 0 : at + 1, ArrowLeft: at === 0 ? last : at - 1, Home: 0, End: last }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    move(to);
  });
  toolbar.addEventListener('focusin', (event) => {
    if (buttons.includes(event.target)) {
      buttons.forEach((b) => b.setAttribute('tabindex', b === event.target ? '0' : '-1'));
    }
  });
}

function richText(host, opts = {}) {
  const label = opts.label || 'Rich text';
  const onChange = typeof opts.onChange === 'function' ? opts.onChange : noop;

  const root = el('div', { class: 'qe-rich' });
  const toolbar = el('div', { class: 'qe-toolbar', role: 'toolbar', 'aria-label': `${label}: formatting` });
  const linkId = nextId('qe-link');
  const linkBar = el('div', { class: 'qe-linkbar', hidden: '' });
  const linkLabel = el('label', { for: linkId, class: 'qe-linkbar-label' }, 'Link address');
  const linkInput = el('input', { id: linkId, type: 'text', inputmode: 'url', autocomplete: 'off', spellcheck: 'false', class: 'qe-input', placeholder: 'https://', 'aria-describedby': `${linkId}-error` });
  const linkApply = el('button', { type: 'button', class: 'qe-btn qe-btn-text' }, 'Apply');
  const linkCancel = el('button', { type: 'button', class: 'qe-btn qe-btn-text' }, 'Cancel');
  const linkError = el('span', { id: `${linkId}-error`, class: 'qe-error', role: 'alert' });
  linkBar.append(linkLabel, linkInput, linkApply, linkCancel, linkError);
  const area = el('div', { class: 'qe-rich-area' });
  root.append(toolbar, linkBar, area);
  host.append(root);

  const editor = new Editor({
    element: area,
    extensions: [
      StarterKit.configure({ heading: { levels: [2, 3, 4] } }),
      Link.configure({
        openOnClick: false,
        autolink: true,
        protocols: ['mailto', 'tel'],
        HTMLAttributes: { rel: 'noopener noreferrer', target: null },
      }),
    ],
    content: opts.html || '',
    editorProps: {
      attributes: { class: 'qe-content', role: 'textbox', 'aria-multiline': 'true', 'aria-label': label },
    },
  });

  // An empty document is "" rather than TipTap's "<p></p>", so a required
  // field left empty is seen as empty.
  const currentHTML = () => (editor.isEmpty ? '' : editor.getHTML());

  const buttons = BUTTONS.map((spec) => {
    const button = el('button', {
      type: 'button',
      class: `qe-btn qe-btn-${spec.name}`,
      'aria-label': spec.label,
      title: spec.keys ? `${spec.label} (${spec.keys})` : spec.label,
      'data-action': spec.name,
    }, spec.text);
    if (spec.active) button.setAttribute('aria-pressed', 'false');
    // Keep the editor's selection: a mouse press on a button does not take focus.
    button.addEventListener('mousedown', (event) => event.preventDefault());
    button.addEventListener('click', () => {
      if (button.getAttribute('aria-disabled') === 'true') return;
      if (spec.name === 'link') openLink();
      else spec.run(editor.chain().focus()).run();
    });
    toolbar.append(button);
    return { spec, button };
  });
  rovingFocus(toolbar, buttons.map((b) => b.button));

  function refresh() {
    for (const { spec, button } of buttons) {
      if (spec.active) button.setAttribute('aria-pressed', String(Boolean(spec.active(editor))));
      if (spec.enabled) button.setAttribute('aria-disabled', String(!spec.enabled(editor)));
    }
  }

  function openLink() {
    linkInput.value = editor.getAttributes('link').href || '';
    linkError.textContent = '';
    linkInput.removeAttribute('aria-invalid');
    linkBar.hidden = false;
    linkInput.focus();
    linkInput.select();
  }

  function closeLink() {
    linkBar.hidden = true;
    editor.commands.focus();
  }

  function applyLink() {
    const href = linkInput.value.trim();
    if (href === '') {
      editor.chain().focus().extendMarkRange('link').unsetLink().run();
      linkBar.hidden = true;
      return;
    }
    if (!allowedLink(href)) {
      linkError.textContent = 'Use a web address (https://…), mailto:, tel: or a path on this site.';
      linkInput.setAttribute('aria-invalid', 'true');
      linkInput.focus();
      return;
    }
    const chain = editor.chain().focus();
    if (editor.state.selection.empty && !editor.isActive('link')) {
      // Nothing selected: the address itself becomes the linked text.
      chain.insertContent({ type: 'text', text: href, marks: [{ type: 'link', attrs: { href } }] }).run();
    } else {
      chain.extendMarkRange('link').setLink({ href }).run();
    }
    linkBar.hidden = true;
  }

  linkApply.addEventListener('click', applyLink);
  linkCancel.addEventListener('click', closeLink);
  linkInput.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      applyLink();
    } else if (event.key === 'Escape') {
      event.preventDefault();
      closeLink();
    }
  });

  editor.on('transaction', refresh);
  editor.on('update', () => onChange(currentHTML()));
  refresh();

  return {
    getHTML: currentHTML,
    // Replaces the content without calling onChange: the caller already knows.
    setHTML(value) {
      editor.commands.setContent(value || '', false);
      refresh();
    },
    focus() {
      editor.commands.focus();
    },
    destroy() {
      editor.destroy();
      root.remove();
    },
  };
}

const LANGUAGES = {
  markdown: () => [markdown({ base: markdownLanguage }), EditorView.lineWrapping],
  html: () => htmlLanguage(),
  css: () => css(),
  javascript: () => javascript(),
  json: () => json(),
  text: () => [],
};

function code(host, opts = {}) {
  // A language the editor does not know is edited as plain text rather
  // than refused: the text itself is what matters.
  const language = Object.prototype.hasOwnProperty.call(LANGUAGES, opts.language) ? opts.language : 'text';
  const onChange = typeof opts.onChange === 'function' ? opts.onChange : noop;
  let quiet = false;

  const root = el('div', { class: 'qe-code', 'data-language': language });
  host.append(root);

  const view = new EditorView({
    parent: root,
    state: EditorState.create({
      doc: opts.doc || '',
      extensions: [
        basicSetup,
        LANGUAGES[language](),
        EditorView.contentAttributes.of({ 'aria-label': opts.label || 'Code' }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged && !quiet) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });

  return {
    getValue: () => view.state.doc.toString(),
    // Replaces the text without calling onChange.
    setValue(text) {
      quiet = true;
      try {
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text || '' } });
      } finally {
        quiet = false;
      }
    },
    focus() {
      view.focus();
    },
    destroy() {
      view.destroy();
      root.remove();
    },
  };
}

window.QuireEditors = Object.freeze({ richText, code });
