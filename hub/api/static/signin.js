/* The sign-in page (/signin/<token>, hub/api/signin.py). An owner's link submits its form
   by itself; the form's answer carries the session's page key, kept here in the hub's
   origin's local storage, where only the hub's own pages (the web chat, the dashboard)
   read it and send it as X-Page-Key. A page on another port of the same host can plant a
   session cookie in this browser, but cannot write this storage: its cookie is nobody. */
"use strict";

(() => {
  const PAGE_KEY = "animahub.pagekey";
  const TOKEN_KEY = "animahub.token"; // a pasted API token would speak instead of the session
  const holder = document.getElementById("page-key");
  if (holder) {
    try {
      window.localStorage.setItem(PAGE_KEY, holder.dataset.key || "");
      window.localStorage.removeItem(TOKEN_KEY);
    } catch {
      holder.textContent = "This browser keeps no local storage for this site, which the web chat needs to sign in.";
      holder.className = "signin-error";
      return;
    }
    window.location.replace(holder.dataset.next || "/");
    return;
  }
  const form = document.querySelector("form[data-auto]");
  if (form) form.submit();
})();
