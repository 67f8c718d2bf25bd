// The hosted sign-in page's passkey button. WebAuthn needs script; the page works without
// it (the section stays hidden). Options come from data-begin, the assertion goes to
// data-finish with the page's CSRF value, and the browser follows the answer's redirect_to.
(function () {
  "use strict";
  var section = document.getElementById("passkey");
  if (!section || !window.PublicKeyCredential || !navigator.credentials || !window.TesseraWebAuthn) {
    return;
  }
  var error = document.getElementById("passkey-error");
  var button = document.getElementById("passkey-button");

  var decode = window.TesseraWebAuthn.decode;
  var encode = window.TesseraWebAuthn.encode;

  function post(url, fields) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields)
    }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) {
          throw { shown: body.error };
        }
        return body;
      });
    });
  }

  section.hidden = false;
  button.addEventListener("click", function () {
    error.hidden = true;
    button.disabled = true;
    post(section.dataset.begin, { csrf: section.dataset.csrf })
      .then(function (body) {
        var o = body.publicKey;
        o.challenge = decode(o.challenge);
        (o.allowCredentials || []).forEach(function (c) {
          c.id = decode(c.id);
        });
        return navigator.credentials.get({ publicKey: o });
      })
      .then(function (cred) {
        var res = cred.response;
        var json = {
          id: cred.id,
          rawId: encode(cred.rawId),
          type: cred.type,
          authenticatorAttachment: cred.authenticatorAttachment || null,
          clientExtensionResults: cred.getClientExtensionResults(),
          response: {
            clientDataJSON: encode(res.clientDataJSON),
            authenticatorData: encode(res.authenticatorData),
            signature: encode(res.signature),
            userHandle: res.userHandle ? encode(res.userHandle) : null
          }
        };
        return post(section.dataset.finish, {
          csrf: section.dataset.csrf,
          credential: JSON.stringify(json)
        });
      })
      .then(function (body) {
        window.location.assign(body.redirect_to);
      })
      .catch(function (e) {
        error.textContent = (e && e.shown) || section.dataset.failed;
        error.hidden = false;
        button.disabled = false;
      });
  });
})();
