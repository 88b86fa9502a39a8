/* Safe, simple markdown for the web chat and the dashboard: no build step, no dependencies.
   Every piece of text is HTML-escaped before it is placed into markup; only tags produced
   here end up as HTML, so text from anyone (a message, a memory) can be rendered. */
"use strict";

(() => {
  const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
  }

  /** Bold and italic, on text that is already escaped. */
  function emphasis(escaped) {
    return escaped
      .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
      .replace(/__(?=\S)([\s\S]*?\S)__/g, "<strong>$1</strong>")
      .replace(/(^|[^*\w])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![*\w])/g, "$1<em>$2</em>")
      .replace(/(^|[^_\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?![_\w])/g, "$1<em>$2</em>");
  }

  const TRAILING_PUNCT = /[.,;:!?'"]+$/;

  function inline(raw) {
    const slots = [];
    const hold = (html) => `\u0000${slots.push(html) - 1}\u0000`;
    let s = raw;
    // Inline code first: nothing inside it is formatted.
    s = s.replace(/(`+)([^`\n]|[^`\n][\s\S]*?[^`\n])\1(?!`)/g, (_, _ticks, code) =>
      hold(`<code>${escapeHtml(code.trim() || code)}</code>`),
    );
    // Links [text](http://...): only http and https targets.
    s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s()<>]+(?:\([^\s()<>]*\)[^\s()<>]*)*)\)/gi, (_, text, url) =>
      hold(
        `<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${emphasis(escapeHtml(text))}</a>`,
      ),
    );
    // Bare URLs.
    s = s.replace(/\bhttps?:\/\/[^\s<>"'`\u0000]+/gi, (match) => {
      let url = match;
      let tail = "";
      const punct = url.match(TRAILING_PUNCT);
      if (punct) {
        tail = punct[0];
        url = url.slice(0, -tail.length);
      }
      // A closing parenthesis without an opening one belongs to the sentence.
      while (url.endsWith(")") && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) {
        url = url.slice(0, -1);
        tail = `)${tail}`;
      }
      return (
        hold(`<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${escapeHtml(url)}</a>`) +
        tail
      );
    });
    s = emphasis(escapeHtml(s));
    return s.replace(/\u0000(\d+)\u0000/g, (_, i) => slots[Number(i)]);
  }

  const FENCE_OPEN = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^`]*$/;
  const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
  const NUMBERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
  const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;

  /** One block of non-blank lines: runs of list items become lists, the rest paragraphs. */
  function paragraphBlock(lines) {
    const out = [];
    let para = [];
    let list = null; // {type: "ul" | "ol", start, items}
    const flushPara = () => {
      if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`);
      para = [];
    };
    const flushList = () => {
      if (!list) return;
      const startAttr = list.type === "ol" && list.start !== 1 ? ` start="${list.start}"` : "";
      out.push(`<${list.type}${startAttr}>${list.items.map((t) => `<li>${inline(t)}</li>`).join("")}</${list.type}>`);
      list = null;
    };
    for (const line of lines) {
      const bullet = line.match(BULLET);
      const numbered = bullet ? null : line.match(NUMBERED);
      const heading = line.match(HEADING);
      if (bullet || numbered) {
        const type = bullet ? "ul" : "ol";
        flushPara();
        if (!list || list.type !== type) {
          flushList();
          list = { type, start: numbered ? Number(numbered[1]) : 1, items: [] };
        }
        list.items.push(bullet ? bullet[1] : numbered[2]);
      } else if (list && /^\s{2,}\S/.test(line)) {
        list.items[list.items.length - 1] += ` ${line.trim()}`; // continuation of an item
      } else if (heading) {
        flushPara();
        flushList();
        out.push(`<p class="md-heading md-h${heading[1].length}"><strong>${inline(heading[2])}</strong></p>`);
      } else {
        flushList();
        para.push(line);
      }
    }
    flushPara();
    flushList();
    return out.join("");
  }

  function renderMarkdown(source) {
    const text = String(source ?? "")
      .replace(/\u0000/g, "")
      .replace(/\r\n?/g, "\n");
    const lines = text.split("\n");
    const blocks = [];
    let para = [];
    const flushPara = () => {
      if (para.length) blocks.push(paragraphBlock(para));
      para = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = line.match(FENCE_OPEN);
      if (fence) {
        flushPara();
        const marker = fence[1];
        const lang = fence[2];
        const code = [];
        i++;
        const close = new RegExp(`^\\s{0,3}${marker[0] === "`" ? "`" : "~"}{${marker.length},}\\s*$`);
        while (i < lines.length && !close.test(lines[i])) code.push(lines[i++]);
        // An unclosed fence (a reply still streaming) runs to the end.
        const label = lang ? `<span class="md-lang">${escapeHtml(lang)}</span>` : "";
        const cls = lang ? ` class="language-${escapeHtml(lang)}"` : "";
        blocks.push(`<div class="md-code">${label}<pre><code${cls}>${escapeHtml(code.join("\n"))}</code></pre></div>`);
        continue;
      }
      if (line.trim() === "") flushPara();
      else para.push(line);
    }
    flushPara();
    return blocks.join("");
  }

  window.AnimaHubMarkdown = { escapeHtml, renderMarkdown };
})();
