// The account page's "add a passkey" step. WebAuthn needs script; without it the section
// stays hidden. The creation options are in data-options (from the API's register/begin,
// after the page's step-up); the credential goes to data-finish with the page's CSRF value,
// and the browser follows the answer's redirect_to.
(function () {
  "use strict";
  var section = document.getElementById("passkey-add");
  if (!section || !window.PublicKeyCredential || !navigator.credentials || !window.TesseraWebAuthn) {
    return;
  }
  var error = document.getElementById("passkey-error");
  var button = document.getElementById("passkey-add-button");
  var name = document.getElementById("passkey-name");

  var decode = window.TesseraWebAuthn.decode;
  var encode = window.TesseraWebAuthn.encode;

  function fail(e) {
    error.textContent = (e && e.shown) || section.dataset.failed;
    error.hidden = false;
    button.disabled = false;
  }

  section.hidden = false;
  button.addEventListener("click", function () {
    error.hidden = true;
    button.disabled = true;
    var o;
    try {
      o = JSON.parse(section.dataset.options);
      o.challenge = decode(o.challenge);
      o.user.id = decode(o.user.id);
      (o.excludeCredentials || []).forEach(function (c) {
        c.id = decode(c.id);
      });
    } catch (e) {
      fail(null);
      return;
    }
    navigator.credentials
      .create({ publicKey: o })
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
            attestationObject: encode(res.attestationObject),
            transports: res.getTransports ? res.getTransports() : []
          }
        };
        return fetch(section.dataset.finish, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            csrf: section.dataset.csrf,
            nickname: name.value,
            credential: JSON.stringify(json)
          })
        });
      })
      .then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok) {
            throw { shown: body.error };
          }
          window.location.assign(body.redirect_to);
        });
      })
      .catch(fail);
  });
})();
