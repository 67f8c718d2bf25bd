// What the hosted pages' passkey scripts share: WebAuthn's binary fields to and from the
// base64url text of the JSON forms the server speaks. Loaded before them.
(function () {
  "use strict";
  window.TesseraWebAuthn = {
    decode: function (s) {
      s = s.replace(/-/g, "+").replace(/_/g, "/");
      while (s.length % 4) {
        s += "=";
      }
      var bin = atob(s);
      var out = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) {
        out[i] = bin.charCodeAt(i);
      }
      return out.buffer;
    },
    encode: function (buf) {
      var bytes = new Uint8Array(buf);
      var bin = "";
      for (var i = 0; i < bytes.length; i++) {
        bin += String.fromCharCode(bytes[i]);
      }
      return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    }
  };
})();
